// The scores grid (templates/committee/review_grid.html): each cell saves as the member moves on
// (Tab, Enter, an arrow key, or leaving the cell), posting that one cell to the form's data-save-url.
// The answer carries that cell's state and the member's count; nothing else on the page is redrawn.
// Saves wait in a queue (one entry a cell, its last value), are retried when the server cannot take them,
// and count as saved only once the server confirms them; #grid-saves says whether everything typed is stored.
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

  // Every typed value is kept until the server has confirmed it. Each cell has one entry in the queue, holding the
  // last value typed into it; the queue is sent one save at a time, in the order the cells were typed, so the
  // server never sees two saves of one member at once and a cell corrected quickly ends with its last value. A
  // cell is "saved" only when the server's answer names the value sent, and only if nothing newer was typed.
  var cells = {};   // input id -> {input, want (value waiting to be sent, or null), sending (value on its way)}
  var order = [];   // ids of cells with a value waiting, first typed first
  var busy = false;

  function entryOf(input) {
    var entry = cells[input.id];
    if (!entry) {
      entry = cells[input.id] = { input: input, want: null, sending: null };
    }
    return entry;
  }

  function save(input) {
    var value = input.value.trim();
    var entry = entryOf(input);
    var latest = entry.want !== null ? entry.want : (entry.sending !== null ? entry.sending : input.getAttribute("data-saved"));
    if (value === latest || (value === "" && latest === "")) {
      return; // already stored, or already on its way (Tab and the blur that follows it both ask)
    }
    if (entry.want === null && order.indexOf(input.id) === -1) {
      order.push(input.id);
    }
    entry.want = value;
    setState(input, "saving", input.form.getAttribute("data-saving"));
    showSaves();
    pump();
  }

  function pump() {
    if (busy) {
      return;
    }
    var id = order.shift();
    if (id === undefined) {
      showSaves();
      return;
    }
    var entry = cells[id];
    var value = entry.want;
    entry.want = null;
    entry.sending = value;
    busy = true;
    send(entry.input, value, 0).then(function (result) {
      entry.sending = null;
      busy = false;
      var input = entry.input;
      if (entry.want === null) { // nothing typed since: this answer is the cell's
        if (result.ok && String(result.answer.value) === value) {
          input.setAttribute("data-saved", value);
          setState(input, "saved", result.answer.message);
          markRow(input.closest("tr"));
        } else {
          setState(input, "error", result.answer ? result.answer.error : input.form.getAttribute("data-offline"));
        }
      }
      if (result.answer) {
        showCount(result.answer);
      }
      pump();
    });
  }

  function unsaved() {
    var form = document.getElementById("grid-form");
    return busy || order.length > 0 || (form && form.querySelector("td.cell[data-state=error]") !== null);
  }

  // The page-wide line under the count: saving, every score saved, or some not saved (their cells say why).
  function showSaves() {
    var line = document.getElementById("grid-saves");
    if (!line) {
      return;
    }
    var state = busy || order.length ? "saving" : (unsaved() ? "error" : "saved");
    if (line.getAttribute("data-state") !== state) {
      line.setAttribute("data-state", state);
      line.textContent = line.getAttribute("data-" + state);
      line.hidden = false;
    }
  }

  // A save the server could not take just then (no answer, or 502/503/504: a restart, a database failing over,
  // a lock) is sent again after a pause, a few times, before the cell says it is not saved.
  var RETRY_DELAYS = [500, 1000, 2000, 4000];

  function wait(ms) {
    return new Promise(function (resolve) { setTimeout(resolve, ms); });
  }

  // One save and its retries; resolves (never rejects) with {ok, answer} (answer null when none came).
  function send(input, value, attempt) {
    var form = input.form;
    var token = form.querySelector("input[name=csrfmiddlewaretoken]");
    var body = new URLSearchParams();
    body.set("request", input.getAttribute("data-request"));
    body.set("criterion", input.getAttribute("data-criterion"));
    body.set("value", value);
    function again() {
      if (attempt >= RETRY_DELAYS.length) {
        return Promise.resolve({ ok: false, answer: null });
      }
      return wait(RETRY_DELAYS[attempt]).then(function () { return send(input, value, attempt + 1); });
    }
    return fetch(form.getAttribute("data-save-url"), {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": token ? token.value : "", "Accept": "application/json" },
      body: body
    }).then(function (response) {
      if (response.status >= 500) {
        return again();
      }
      return response.json().then(function (answer) {
        return { ok: response.ok, answer: answer };
      });
    }).catch(again);
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
    if (event.key === "Tab") {
      move = [0, event.shiftKey ? -1 : 1];
    }
    if (!move) {
      return;
    }
    save(input);
    var next = neighbour(input, move[0], move[1]);
    // Tab and Shift-Tab go from score cell to score cell, from a row's end to the next row's first cell (past the
    // request's link); past the grid's first or last cell they leave it as usual. Enter would submit the form.
    if (next || event.key !== "Tab") {
      event.preventDefault();
    }
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
    // Leaving the page while a score is still on its way, or was not stored, asks first.
    window.addEventListener("beforeunload", function (event) {
      var active = document.activeElement;
      if (active && active.matches && active.matches("input.grid-cell")) {
        save(active); // typed, not yet left: on its way now
      }
      if (unsaved()) {
        event.preventDefault();
        event.returnValue = "";
      }
    });
    form.classList.add("live"); // the per-page save button is for the form without JavaScript
  }

  document.addEventListener("DOMContentLoaded", init);
})();
