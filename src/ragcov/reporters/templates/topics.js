// The topic page: hovering a point on the corpus map names its topic and lights that
// topic's row and points; hovering a row lights its points. Reads the DOM only
// (every label is already escaped in the HTML) and writes text, never markup.
"use strict";

function lightTopic(map, table, topic) {
  map.classList.toggle("focus", topic !== null);
  map.querySelectorAll(".pt").forEach((p) => p.classList.toggle("lit", p.dataset.topic === topic));
  table.querySelectorAll("tr.topic").forEach((r) => r.classList.toggle("lit", r.dataset.topic === topic));
}

document.addEventListener("DOMContentLoaded", () => {
  const map = document.getElementById("topic-map");
  const table = document.getElementById("topics");
  const tip = document.getElementById("topic-tip");
  if (!map || !table || !tip) return;
  const frame = map.parentElement;
  map.addEventListener("mouseover", (event) => {
    const p = event.target.closest(".pt");
    if (!p) return;
    tip.textContent = p.dataset.topic + " " + p.dataset.label + " · " + p.dataset.name;
    const box = frame.getBoundingClientRect();
    const at = p.getBoundingClientRect();
    tip.style.left = (at.left + at.width / 2 - box.left) + "px";
    tip.style.top = (at.top - box.top) + "px";
    tip.hidden = false;
    lightTopic(map, table, p.dataset.topic);
  });
  map.addEventListener("mouseleave", () => {
    tip.hidden = true;
    lightTopic(map, table, null);
  });
  table.querySelectorAll("tr.topic").forEach((row) => {
    row.addEventListener("mouseenter", () => lightTopic(map, table, row.dataset.topic));
    row.addEventListener("mouseleave", () => lightTopic(map, table, null));
  });
});
