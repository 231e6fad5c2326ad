// Evaluation report: polls the progress endpoint and updates the bar in place, so the
// reader sees labels arrive without losing their place. When a newer score run exists
// it offers a refresh instead of reloading under the reader's feet.
(function () {
  "use strict";
  var card = document.getElementById("progress-card");
  if (!card || !card.dataset.progressUrl) { return; }
  var url = card.dataset.progressUrl;
  var shownRun = card.dataset.run || "";
  var finalStates = { scored: 1, withdrawn: 1, rejected: 1, failed: 1 };
  var delay = 3000;

  function fmt(n) { return Number(n).toLocaleString("en-US"); }
  function setText(id, text) { var el = document.getElementById(id); if (el) { el.textContent = text; } }

  function apply(d) {
    var fill = document.getElementById("progress-fill");
    if (fill) { fill.style.width = d.percent + "%"; }
    var bar = card.querySelector("[role=progressbar]");
    if (bar) { bar.setAttribute("aria-valuenow", String(d.percent)); }
    setText("progress-labelled", fmt(d.labelled_pairs));
    setText("progress-drawn", fmt(d.drawn_pairs));
    setText("progress-pct", String(d.percent));
    setText("progress-answers", fmt(d.answers_received) + " of " + fmt(d.answers_needed));
    setText("progress-open", fmt(d.open_questions));
    setText("eval-state", d.state);
    if (d.run !== null && String(d.run) !== shownRun) {
      var note = document.getElementById("new-scores");
      if (note) { note.hidden = false; }
    }
    // A final state is final: a withdrawn (or rejected, failed) submission may keep
    // unlabelled draws, and polling until they reach 100% never ended.
    return !(d.state in finalStates);
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) {
        if (r.status === 404) { return null; }  // no longer visible to this reader: stop
        if (!r.ok) { throw new Error(String(r.status)); }
        return r.json();
      })
      .then(function (d) {
        if (d !== null && apply(d)) {
          delay = Math.min(delay * 1.3, 30000);
          window.setTimeout(poll, delay);
        }
      })
      .catch(function () { delay = Math.min(delay * 2, 60000); window.setTimeout(poll, delay); });
  }
  window.setTimeout(poll, delay);
})();
