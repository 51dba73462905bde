// ragcov HTML report: sorting and filtering of the tables, with no libraries.
// Reads only the DOM (text is already escaped in the HTML); never builds markup.
"use strict";

function cellValue(row, col, type) {
  const cell = row.cells[col];
  const raw = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent;
  if (type === "num") {
    const n = parseFloat(raw);
    return Number.isNaN(n) ? -Infinity : n;
  }
  return raw.toLowerCase();
}

function makeSortable(table) {
  const headers = Array.from(table.tHead.rows[0].cells);
  headers.forEach((th, col) => {
    const button = th.querySelector("button");
    if (!button) return;
    button.addEventListener("click", () => {
      const type = th.dataset.type || "text";
      // First click: names ascending, numbers descending (largest first), then toggle.
      const current = th.getAttribute("aria-sort");
      let dir;
      if (current === "ascending") dir = "descending";
      else if (current === "descending") dir = "ascending";
      else dir = type === "num" ? "descending" : "ascending";
      headers.forEach((h) => { if (h.hasAttribute("aria-sort")) h.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", dir);
      const sign = dir === "ascending" ? 1 : -1;
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        const x = cellValue(a, col, type);
        const y = cellValue(b, col, type);
        if (x < y) return -sign;
        if (x > y) return sign;
        return 0;
      });
      rows.forEach((r) => body.appendChild(r));
    });
  });
}

function makeFilterable(table) {
  const input = document.getElementById("filter");
  const hideCovered = document.getElementById("hide-covered");
  const count = document.getElementById("shown-count");
  const none = document.getElementById("no-rows");
  const rows = Array.from(table.tBodies[0].rows);
  function apply() {
    const needle = input ? input.value.trim().toLowerCase() : "";
    const hide = hideCovered ? hideCovered.checked : false;
    let shown = 0;
    rows.forEach((r) => {
      const name = (r.dataset.name || r.textContent).toLowerCase();
      const visible = (!needle || name.includes(needle)) && !(hide && r.classList.contains("full"));
      r.classList.toggle("hidden", !visible);
      if (visible) shown += 1;
    });
    if (count) count.textContent = shown + " of " + rows.length + " shown";
    if (none) none.hidden = shown !== 0;
  }
  if (input) input.addEventListener("input", apply);
  if (hideCovered) hideCovered.addEventListener("change", apply);
  apply();
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("table.sortable").forEach(makeSortable);
  const table = document.querySelector("table.index");
  if (table && document.getElementById("filter")) makeFilterable(table);
  const onlyMissing = document.getElementById("only-missing");
  if (onlyMissing) {
    onlyMissing.addEventListener("change", () => {
      document.body.classList.toggle("only-missing", onlyMissing.checked);
    });
  }
});

// Keyboard shortcuts, as htmlcov has them: j/k (or n/p) step through the uncovered
// chunks of a document, [ and ] go to the previous and next document, u to the
// index, / or f focus the filter, ? shows the help. Keys typed into a field are text.
function stepMissing(delta) {
  const chunks = Array.from(document.querySelectorAll("ol.chunks li.chunk.missing"));
  if (!chunks.length) return;
  const current = document.querySelector("li.chunk.focus");
  let at = chunks.indexOf(current);
  if (current) current.classList.remove("focus");
  at = at < 0 ? (delta > 0 ? 0 : chunks.length - 1)
    : (at + delta + chunks.length) % chunks.length;
  const target = chunks[at];
  target.classList.add("focus");
  target.scrollIntoView({ block: "center" });
}

function follow(selector) {
  const link = document.querySelector(selector);
  if (link) window.location.href = link.href;
}

function toggleHelp(show) {
  const help = document.getElementById("keyboard-help");
  if (help) help.hidden = show === undefined ? !help.hidden : !show;
}

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const tag = event.target && event.target.tagName;
  if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") {
    if (event.key === "Escape") event.target.blur();
    return;
  }
  const filter = document.getElementById("filter");
  switch (event.key) {
    case "j": case "n": stepMissing(1); break;
    case "k": case "p": stepMissing(-1); break;
    case "[": follow("nav.pager a.prev"); break;
    case "]": follow("nav.pager a.next"); break;
    case "u": if (document.querySelector("nav.pager")) follow("nav.pager a[href='index.html']"); break;
    case "/": case "f":
      if (!filter) return;
      filter.focus();
      break;
    case "?": toggleHelp(); break;
    case "Escape": toggleHelp(false); break;
    default: return;
  }
  event.preventDefault();
});
