// The weekly review: draws the priority matrix and each pool's placement timeline with the app's own
// Plotly, and redraws them when an inline save (htmx) brings new figure data.
(function () {
  "use strict";

  var config = { displaylogo: false, responsive: true };

  function drawMatrix() {
    var target = document.getElementById("priority-matrix");
    var source = document.getElementById("matrix-data");
    if (!target || !source) {
      return;
    }
    var figure = JSON.parse(source.textContent);
    Plotly.react(target, figure.data, figure.layout, config);
  }

  function drawTimelines() {
    var source = document.getElementById("placement-data");
    if (!source) {
      return;
    }
    var figures = JSON.parse(source.textContent);
    document.querySelectorAll("[data-timeline]").forEach(function (target) {
      var figure = figures[target.getAttribute("data-timeline")];
      if (figure) {
        Plotly.react(target, figure.data, figure.layout, config);
      }
    });
  }

  function draw() {
    if (typeof Plotly === "undefined") {
      return;
    }
    drawMatrix();
    drawTimelines();
  }

  document.addEventListener("DOMContentLoaded", draw);
  document.addEventListener("htmx:afterSettle", draw);
})();
