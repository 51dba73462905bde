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
  const table = document.getElementById("documents") || document.querySelector("table.index");
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

// The corpus map: one cell per chunk, documents in corpus order, a gap between documents.
// Drawn on a canvas from a JSON block (no element per chunk), so 100,000 chunks stay light.
const MAP_COLOURS = ["#d9d9d9", "#3f9a3a", "#e0a800", "#6b4a91", "#d81b60"];  // 4: hidden by the index
function drawCorpusMap() {
  const canvas = document.getElementById("corpus-map");
  const source = document.getElementById("corpus-map-data");
  if (!canvas || !source) return;
  const docs = JSON.parse(source.textContent).docs;
  const total = docs.reduce((n, d) => n + d.c.length + 1, 0);
  const width = canvas.parentElement.clientWidth || 960;
  const cell = total > 20000 ? 3 : total > 4000 ? 5 : 8;
  const perRow = Math.max(1, Math.floor(width / cell));
  const rows = Math.ceil(total / perRow);
  canvas.width = perRow * cell;
  canvas.height = rows * cell;
  const ctx = canvas.getContext("2d");
  const cells = [];  // per slot: [document index, chunk index] or null for a gap
  let slot = 0;
  docs.forEach((d, di) => {
    d.c.forEach((code, ci) => {
      ctx.fillStyle = MAP_COLOURS[code] || MAP_COLOURS[0];
      ctx.fillRect((slot % perRow) * cell, Math.floor(slot / perRow) * cell,
                   Math.max(1, cell - 1), Math.max(1, cell - 1));
      cells[slot++] = [di, ci];
    });
    cells[slot++] = null;
  });
  const at = (event) => {
    const box = canvas.getBoundingClientRect();
    const x = Math.floor((event.clientX - box.left) * canvas.width / box.width / cell);
    const y = Math.floor((event.clientY - box.top) * canvas.height / box.height / cell);
    return cells[y * perRow + x] || null;
  };
  canvas.addEventListener("mousemove", (event) => {
    const hit = at(event);
    canvas.title = hit ? `${docs[hit[0]].d} #${hit[1] + 1}` : "";
  });
  canvas.addEventListener("click", (event) => {
    const hit = at(event);
    if (!hit) return;
    const d = docs[hit[0]];
    if (d.f) window.location.href = d.f + (d.h[hit[1]] ? "#" + d.h[hit[1]] : "");
  });
}
document.addEventListener("DOMContentLoaded", drawCorpusMap);
