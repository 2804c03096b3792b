// Click a column header to sort its table; numeric cells carry their value in data-sort.
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0], col = th.cellIndex;
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    function key(row) {
      var cell = row.cells[col], value = cell ? cell.getAttribute("data-sort") : null;
      return value !== null ? parseFloat(value) : (cell ? cell.textContent.trim().toLowerCase() : "");
    }
    Array.prototype.slice.call(body.rows)
      .sort(function (a, b) { var x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1); })
      .forEach(function (row) { body.appendChild(row); });
  });
});
