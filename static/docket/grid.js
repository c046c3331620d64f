// The scores grid (templates/committee/review_grid.html): each cell saves as the member moves on
// (Tab, Enter, an arrow key, or leaving the cell), posting that one cell to the form's data-save-url.
// The answer carries that cell's state and the member's count; nothing else on the page is redrawn.
// Without this script the grid is a plain form whose submit saves the page's cells together.
(function () {
  "use strict";

  function rowsOf(table) {
    return Array.prototype.filter.call(table.querySelectorAll("tbody tr"), function (tr) {
      return tr.querySelector("input.grid-cell:not([disabled])");
    });
  }

  function inputsOf(tr) {
    return Array.prototype.slice.call(tr.querySelectorAll("input.grid-cell:not([disabled])"));
  }

  function neighbour(input, dRow, dCol) {
    var table = input.closest("table");
    var all = Array.prototype.slice.call(table.querySelectorAll("input.grid-cell:not([disabled])"));
    if (dCol) {
      return all[all.indexOf(input) + dCol] || null;
    }
    var rows = rowsOf(table);
    var tr = input.closest("tr");
    var next = rows[rows.indexOf(tr) + dRow];
    if (!next) {
      return null;
    }
    var column = inputsOf(tr).indexOf(input);
    var inputs = inputsOf(next);
    return inputs[Math.min(column, inputs.length - 1)] || null;
  }

  function setState(input, state, text) {
    var cell = input.closest("td");
    var status = cell.querySelector(".cell-state");
    cell.setAttribute("data-state", state);
    cell.classList.toggle("has-error", state === "error");
    status.textContent = text || "";
    if (state === "error") {
      input.setAttribute("aria-invalid", "true");
      input.setAttribute("aria-describedby", status.id);
    } else {
      input.removeAttribute("aria-invalid");
    }
  }

  function showCount(answer) {
    var count = document.getElementById("queue-count");
    if (!count || !answer.count_text) {
      return;
    }
    count.querySelector("strong").textContent = answer.count_text;
    var bar = count.querySelector("progress");
    if (bar) {
      bar.max = answer.scorable;
      bar.value = answer.scored;
    }
  }

  function markRow(tr) {
    var done = inputsOf(tr).every(function (input) {
      return input.getAttribute("data-saved") !== "";
    });
    tr.classList.toggle("done", done);
    tr.classList.toggle("to-score", !done);
  }

  // Saves go one at a time, in the order they were typed: a cell corrected quickly ends with its last value, and
  // the server never sees two saves of one member at once. A value already on its way is not sent again (Tab and
  // the blur that follows it would otherwise both send it).
  var pending = Promise.resolve();

  function save(input) {
    var value = input.value.trim();
    if (value === input.getAttribute("data-saved") || (value === "" && input.getAttribute("data-saved") === "")) {
      return;
    }
    if (input.getAttribute("data-sending") === value) {
      return;
    }
    input.setAttribute("data-sending", value);
    setState(input, "saving", input.form.getAttribute("data-saving"));
    pending = pending.then(function () { return send(input, value); });
  }

  // A save the server could not take just then (no answer, or 502/503/504: a restart, a database failing over,
  // a lock) is sent again after a pause, a few times, before the cell says it is not saved.
  var RETRY_DELAYS = [500, 1000, 2000, 4000];

  function wait(ms) {
    return new Promise(function (resolve) { setTimeout(resolve, ms); });
  }

  function send(input, value, attempt) {
    attempt = attempt || 0;
    var form = input.form;
    var token = form.querySelector("input[name=csrfmiddlewaretoken]");
    var body = new URLSearchParams();
    body.set("request", input.getAttribute("data-request"));
    body.set("criterion", input.getAttribute("data-criterion"));
    body.set("value", value);
    function done() {
      if (input.getAttribute("data-sending") === value) {
        input.removeAttribute("data-sending");
      }
    }
    function again() {
      if (attempt >= RETRY_DELAYS.length || input.value.trim() !== value) {
        return null; // given up, or typed again meanwhile: that value's own save answers for the cell
      }
      return wait(RETRY_DELAYS[attempt]).then(function () { return send(input, value, attempt + 1); });
    }
    return fetch(form.getAttribute("data-save-url"), {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": token ? token.value : "", "Accept": "application/json" },
      body: body
    }).then(function (response) {
      if (response.status === 502 || response.status === 503 || response.status === 504) {
        var retry = again();
        if (retry) {
          return retry;
        }
      }
      return response.json().then(function (answer) {
        done();
        if (input.value.trim() !== value) {
          return; // typed again meanwhile: that value's own save answers for the cell
        }
        if (response.ok) {
          input.setAttribute("data-saved", value);
          setState(input, "saved", answer.message);
          markRow(input.closest("tr"));
        } else {
          setState(input, "error", answer.error);
        }
        showCount(answer);
      });
    }).catch(function () {
      var retry = again();
      if (retry) {
        return retry;
      }
      done();
      setState(input, "error", form.getAttribute("data-offline"));
    });
  }

  var MOVES = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };

  function onKey(event) {
    var input = event.target;
    if (!input.matches || !input.matches("input.grid-cell")) {
      return;
    }
    var move = MOVES[event.key];
    if (event.key === "Enter") {
      move = [event.shiftKey ? -1 : 1, 0];
    }
    if (!move) {
      return;
    }
    event.preventDefault(); // Enter would submit the whole page's form
    save(input);
    var next = neighbour(input, move[0], move[1]);
    if (next) {
      next.focus();
    }
  }

  function init() {
    var form = document.getElementById("grid-form");
    if (!form) {
      return;
    }
    form.querySelectorAll("input.grid-cell").forEach(function (input) {
      input.setAttribute("data-saved", input.closest("td").getAttribute("data-state") === "saved" ? input.value : "");
    });
    form.addEventListener("keydown", onKey);
    form.addEventListener("change", function (event) {
      if (event.target.matches("input.grid-cell")) {
        save(event.target);
      }
    });
    // Entering a cell selects what it holds, so a digit typed replaces it: at once (a digit may follow the focus
    // immediately), and the click's own mouseup, which would put the caret back, is told not to.
    form.addEventListener("focusin", function (event) {
      var input = event.target;
      if (input.matches("input.grid-cell")) {
        input.select();
        input.setAttribute("data-just-focused", "");
      }
    });
    form.addEventListener("mouseup", function (event) {
      var input = event.target;
      if (input.matches && input.matches("input.grid-cell[data-just-focused]")) {
        event.preventDefault();
      }
    });
    form.addEventListener("focusout", function (event) {
      if (event.target.removeAttribute) {
        event.target.removeAttribute("data-just-focused");
      }
    });
    form.addEventListener("input", function (event) {
      if (event.target.removeAttribute) {
        event.target.removeAttribute("data-just-focused");
      }
    });
    form.classList.add("live"); // the per-page save button is for the form without JavaScript
  }

  document.addEventListener("DOMContentLoaded", init);
})();
