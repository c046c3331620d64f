// The replay of past weeks: its bad-parameter answer (400, header X-Docket-Replay) is swapped in like
// any result, so the list of problems shows where the results would; and the change chart is drawn
// with the app's own Plotly from the figure JSON the results carry (no inline script: the CSP).
(function () {
  "use strict";

  function draw() {
    var target = document.getElementById("replay-chart");
    var source = document.getElementById("replay-figure");
    if (!target || !source || typeof Plotly === "undefined") {
      return;
    }
    var figure = JSON.parse(source.textContent);
    Plotly.react(target, figure.data, figure.layout, { displaylogo: false, responsive: true, displayModeBar: false });
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    if (xhr && xhr.status === 400 && xhr.getResponseHeader("X-Docket-Replay")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  document.addEventListener("htmx:afterSettle", draw);
  document.addEventListener("DOMContentLoaded", draw);
  window.addEventListener("load", draw);
})();
