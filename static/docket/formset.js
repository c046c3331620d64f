// Adds a row to the alternatives formset from its <template>, keeping Django's TOTAL_FORMS in step.
(function () {
  const button = document.getElementById("add-alternative");
  if (!button) return;
  const total = document.getElementById("id_alt-TOTAL_FORMS");
  const template = document.getElementById("alternative-template");
  const target = document.getElementById("alternatives");
  button.addEventListener("click", function () {
    const index = parseInt(total.value, 10);
    const html = template.innerHTML.replace(/__prefix__/g, String(index));
    target.insertAdjacentHTML("beforeend", html);
    total.value = String(index + 1);
    const first = target.lastElementChild.querySelector("input");
    if (first) first.focus();
  });
})();
