// The weekly review: draws the priority matrix and each pool's placement timeline with the app's own
// Plotly, and redraws them when an inline save (htmx) brings new figure data or a new placement section.
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

  // Each pool's timeline is fetched when its <details> is opened (the first screen carries no figure), and
  // fetched again after an htmx swap for the pools the member had open.
  var opened = {};

  function drawTimeline(details) {
    var target = details.querySelector("[data-timeline]");
    if (!target || typeof Plotly === "undefined") {
      return;
    }
    fetch(details.getAttribute("data-timeline-url"), {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    })
      .then(function (response) {
        return response.ok ? response.json() : null;
      })
      .then(function (figure) {
        if (figure && details.isConnected) {
          Plotly.react(target, figure.data, figure.layout, config);
        }
      });
  }

  function onToggle(event) {
    var details = event.target;
    if (!details.matches || !details.matches("details[data-timeline-url]")) {
      return;
    }
    opened[details.getAttribute("data-timeline-url")] = details.open;
    if (details.open) {
      drawTimeline(details);
    }
  }

  function reopenTimelines() {
    document.querySelectorAll("details[data-timeline-url]").forEach(function (details) {
      if (opened[details.getAttribute("data-timeline-url")] && !details.open) {
        details.open = true; // its toggle event fetches the figure again
      }
    });
  }

  function draw() {
    if (typeof Plotly === "undefined") {
      return;
    }
    drawMatrix();
    reopenTimelines();
  }

  document.addEventListener("toggle", onToggle, true); // toggle does not bubble: listen while it is captured
  document.addEventListener("DOMContentLoaded", draw);
  document.addEventListener("htmx:afterSettle", draw);
})();
