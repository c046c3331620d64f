// Draw each decision record chart from the figure JSON the page embeds (plotly.js is served by the app).
document.addEventListener("DOMContentLoaded", function () {
  if (typeof Plotly === "undefined") { return; }
  document.querySelectorAll(".plotly-chart").forEach(function (element) {
    var source = document.getElementById(element.dataset.figureId);
    if (!source) { return; }
    var figure = JSON.parse(source.textContent);
    Plotly.newPlot(element, figure.data, figure.layout, { responsive: true, displaylogo: false });
  });
});
