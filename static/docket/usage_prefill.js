// Last week's usage follows the team and pool chosen (#usage-live asks, htmx swaps #usage-prefill). A figure
// typed while the new pre-fill was on its way is not overwritten: that swap is dropped, and the next change
// sends the figure along (the server keeps figures that differ from what it pre-filled).
(function () {
  let typedAt = 0;
  let sentAt = 0;
  document.addEventListener("input", function (event) {
    if (event.target.closest && event.target.closest("#usage-prefill")) typedAt = performance.now();
  });
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (event.detail.elt.id === "usage-live") sentAt = performance.now();
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    // Dispatched on the swap's target (#usage-prefill), not on #usage-live, which asked.
    const target = event.detail.target || event.detail.elt;
    if (target && target.id === "usage-prefill" && typedAt >= sentAt) event.detail.shouldSwap = false;
  });
})();
