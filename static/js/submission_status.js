// Polls the submission's status while it is being processed and reloads the page
// once the state changes, so the report and statistics appear without a manual refresh.
(function () {
  "use strict";
  var card = document.getElementById("status-card");
  if (!card || !card.dataset.statusUrl) { return; }
  var url = card.dataset.statusUrl;
  var badge = document.getElementById("state-badge");
  var initial = badge ? badge.textContent.trim() : "";
  var delay = 2000;

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.json(); })
      .then(function (data) {
        if (data.state !== initial) { window.location.reload(); return; }
        delay = Math.min(delay * 1.5, 30000);
        window.setTimeout(poll, delay);
      })
      .catch(function () { delay = Math.min(delay * 2, 60000); window.setTimeout(poll, delay); });
  }
  window.setTimeout(poll, delay);
})();
