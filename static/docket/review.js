// The weekly review: draws the priority matrix with the app's own Plotly, and redraws it when
// an inline save (htmx) brings new matrix data.
(function () {
  "use strict";

  function draw() {
    var target = document.getElementById("priority-matrix");
    var source = document.getElementById("matrix-data");
    if (!target || !source || typeof Plotly === "undefined") {
      return;
    }
    var figure = JSON.parse(source.textContent);
    Plotly.react(target, figure.data, figure.layout, { displaylogo: false, responsive: true });
  }

  document.addEventListener("DOMContentLoaded", draw);
  document.addEventListener("htmx:afterSettle", draw);
})();
