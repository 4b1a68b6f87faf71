// The little script the console has: filter a table's rows as you type. The pages work without it.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const input of document.querySelectorAll("input[data-filter]")) {
    const table = document.getElementById(input.dataset.filter);
    if (!table) continue;
    input.addEventListener("input", () => {
      const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      for (const row of table.tBodies[0].rows) {
        const text = row.textContent.toLowerCase();
        row.classList.toggle("hidden", !words.every((word) => text.includes(word)));
      }
    });
  }
});
