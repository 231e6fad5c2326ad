/* Shared behaviour of the annotation task pages: configuration, submission (our
 * intake first, then MTurk), instructions toggle, status line, small DOM helpers.
 * Page data arrives through json_script blocks and is inserted with textContent only. */
(function () {
  "use strict";
  const cfg = JSON.parse(document.getElementById("task-config").textContent);
  const data = JSON.parse(document.getElementById("task-data").textContent);
  const submitBtn = document.getElementById("submit-btn");
  const statusEl = document.getElementById("status");
  const canSubmitMode = ["mturk", "local", "try"].includes(cfg.mode);
  let ready = false;
  let busy = false;
  let payloadFn = null;
  const startedAt = performance.now();
  // Relations one answer may mark for one pair (KBPO_MAX_RELATIONS_PER_ANSWER; the
  // intake refuses more).
  const maxRelations = Number.isInteger(cfg.max_relations) && cfg.max_relations > 0
    ? cfg.max_relations : Infinity;
  const capMessage = "At most " + maxRelations + " relations per pair: untick one to choose another.";
  let capShown = false;

  /** Toggle a relation (or "no relation") in a pair's answer set, stopping at the cap
   * with a message; false when the cap stopped it. */
  function toggleChoice(set, value, none) {
    if (value === none) {
      const had = set.has(none);
      set.clear();
      if (!had) set.add(none);
    } else if (set.has(value)) {
      set.delete(value);
    } else {
      set.delete(none);
      if (set.size >= maxRelations) {
        setStatus(capMessage, "error");
        capShown = true;
        return false;
      }
      set.add(value);
    }
    if (capShown) { setStatus(""); capShown = false; }
    return true;
  }

  /** Whether an unticked relation option is beyond the cap (shown dimmed). */
  function capped(set, value, none) {
    return value !== none && !set.has(value) && !set.has(none) && set.size >= maxRelations;
  }

  /** Create an element; children are nodes or strings (inserted as text, never HTML). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  function setStatus(text, kind) {
    statusEl.textContent = text || "";
    statusEl.className = "task-status" + (kind ? " " + kind : "");
  }

  function setReady(value, why) {
    ready = !!value;
    submitBtn.disabled = !(ready && canSubmitMode) || busy;
    if (cfg.mode === "preview") submitBtn.title = "Accept the HIT on MTurk to submit";
    else if (cfg.mode === "closed") submitBtn.title = "This task takes no answers";
    else submitBtn.title = ready ? "" : (why || "Answer every question first");
  }

  function isTyping(event) {
    const t = event.target;
    return t && (t.tagName === "INPUT" && t.type !== "checkbox" || t.tagName === "TEXTAREA" ||
                 t.tagName === "SELECT" || t.isContentEditable);
  }

  /** Whether Enter on this event's target keeps its own meaning (a link, or a button
   * that is not an answer option) instead of moving to the next question. */
  function enterIsOwn(event) {
    const t = event.target;
    return Boolean(t && (t.tagName === "BUTTON" || t.tagName === "A") &&
                   !t.classList.contains("option"));
  }

  function wikiUrl(link) {
    const title = String(link || "").replace(/^Wikipedia:/, "");
    return "https://en.wikipedia.org/wiki/" + encodeURIComponent(title.replace(/ /g, "_"));
  }

  function postToMturk(url, payload) {
    // A real form POST in this frame, as MTurk's ExternalQuestion requires.
    const form = el("form", {method: "POST", action: url, id: "mturk-form", hidden: true},
      el("input", {type: "hidden", name: "assignmentId", value: cfg.mturk.assignmentId}),
      el("input", {type: "hidden", name: "answers", value: JSON.stringify(payload)}));
    document.body.append(form);
    form.submit();
  }

  function showTryResult(payload) {
    document.getElementById("try-json").textContent = JSON.stringify(payload, null, 2);
    const box = document.getElementById("try-result");
    box.hidden = false;
    box.querySelector("a.button").setAttribute("href", window.location.pathname);
    document.getElementById("try-close").focus();
  }

  async function submit() {
    if (!ready || busy || !canSubmitMode || !payloadFn) return;
    const payload = {answers: payloadFn()};
    if (cfg.mode === "try") {
      setStatus("Nothing was stored (try-it mode).", "ok");
      showTryResult(payload);
      return;
    }
    busy = true;
    setReady(ready);
    setStatus("Saving your answers…");
    const headers = {"Content-Type": "application/json", "Accept": "application/json"};
    let body = payload;
    let credentials = "omit";  // MTurk: identity from MTurk's parameters, no cookies needed
    if (cfg.mode === "mturk") {
      body = Object.assign({}, cfg.mturk, payload);
    } else {
      headers["X-CSRFToken"] = cfg.csrf;
      credentials = "same-origin";
    }
    let result = null;
    let status = 0;
    try {
      const response = await fetch(cfg.answers_url, {
        method: "POST", headers, credentials, body: JSON.stringify(body)});
      status = response.status;
      result = await response.json().catch(() => null);
    } catch (err) {
      result = null;
    }
    if (!result || !result.ok) {
      busy = false;
      setReady(ready);
      const msg = result && result.error ? result.error
        : status === 403 ? "Your session expired: reload the page (your answers stay on screen until then)."
        : "Could not reach the server. Check your connection and press Submit again.";
      setStatus("Not submitted: " + msg, "error");
      return;
    }
    setStatus("Saved.", "ok");
    if (cfg.mode === "mturk") postToMturk(result.submit_to, payload);
    else window.location.assign(result.next);
  }

  submitBtn.addEventListener("click", submit);
  document.getElementById("try-close").addEventListener("click", () => {
    document.getElementById("try-result").hidden = true;
    submitBtn.focus();
  });

  const help = document.getElementById("instructions");
  const helpBtn = document.getElementById("help-toggle");
  function toggleHelp() {
    help.hidden = !help.hidden;
    helpBtn.setAttribute("aria-expanded", String(!help.hidden));
    try { window.localStorage.setItem("kbpo-help-hidden", help.hidden ? "1" : "0"); } catch (e) { /* storage blocked in iframes */ }
  }
  helpBtn.addEventListener("click", toggleHelp);
  try { if (window.localStorage.getItem("kbpo-help-hidden") === "1") toggleHelp(); } catch (e) { /* ignore */ }

  document.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      submit();
    } else if (event.key === "?" && !isTyping(event)) {
      event.preventDefault();
      toggleHelp();
    }
  });

  /** One question at a time, as the relation pages ask them: time on each question, the
   * dots, the progress line, prev/next, arrow keys and Enter, and the payload. The page
   * passes show() (redraw after moving), keys(key) (its own keys; true when handled),
   * extra(i) (the answer's "extra") and unanswered (the hint when Enter comes too early). */
  function questionSteps(questions, answers, opts) {
    let current = 0;
    let shownAt = performance.now();
    const byId = (id) => document.getElementById(id);
    const answered = (i) => answers[i].choices.size > 0;
    const allAnswered = () => answers.every((a, i) => answered(i));

    function tick() {
      const now = performance.now();
      answers[current].seconds += (now - shownAt) / 1000;
      shownAt = now;
    }

    function go(i) {
      if (i < 0 || i >= questions.length) return;
      tick();
      current = i;
      opts.show();
    }

    function next() {
      if (!answered(current)) {
        setStatus(opts.unanswered, "error");
        return;
      }
      setStatus("");
      const todo = answers.findIndex((a, i) => i > current && !answered(i));
      if (current < questions.length - 1) go(todo >= 0 ? todo : current + 1);
      else if (allAnswered()) submitBtn.focus();
    }

    function renderDots() {
      const nav = byId("dots");
      nav.replaceChildren();
      if (questions.length < 2) return;
      questions.forEach((q, i) => {
        nav.append(el("button", {type: "button", class: "dot" + (answered(i) ? " done" : "") +
          (i === current ? " current" : ""), "aria-label": "Question " + (i + 1) +
          (answered(i) ? " (answered)" : ""), "aria-current": i === current ? "step" : null,
          onclick: () => go(i)}, String(i + 1)));
      });
    }

    function renderProgress() {
      const done = answers.filter((a, i) => answered(i)).length;
      byId("progress").textContent = "Question " + (current + 1) + " of " + questions.length +
        " · " + done + " answered";
      byId("prev-btn").disabled = current === 0;
      byId("next-btn").disabled = !answered(current) || current === questions.length - 1;
      setReady(allAnswered(), "Answer every question first (" + done + " of " + questions.length + " done)");
    }

    document.addEventListener("keydown", (event) => {
      if (isTyping(event) || event.ctrlKey || event.metaKey || event.altKey) return;
      const key = event.key;
      if (opts.keys(key)) { /* the page's own key */ }
      else if (key === "ArrowLeft") go(current - 1);
      else if (key === "ArrowRight") { if (answered(current)) go(current + 1); }
      else if (key === "Enter") {
        if (enterIsOwn(event)) return;
        next();
      } else return;
      event.preventDefault();
    });
    byId("prev-btn").addEventListener("click", () => go(current - 1));
    byId("next-btn").addEventListener("click", next);

    payloadFn = () => {
      tick();
      return questions.map((q, i) => ({
        question: q.id,
        choices: Array.from(answers[i].choices).sort(),
        extra: opts.extra(i),
        seconds: Math.round(answers[i].seconds * 10) / 10,
      }));
    };

    return {get current() { return current; }, answered, go, renderDots, renderProgress};
  }

  if (cfg.mode === "preview") setStatus("Preview — accept the HIT to answer.");
  setReady(false);

  window.KBPO = {
    cfg, data, el, setStatus, setReady, isTyping, enterIsOwn, wikiUrl, submit,
    toggleChoice, capped,
    questionSteps,
    canAnswer: cfg.mode !== "closed",
    elapsed: () => (performance.now() - startedAt) / 1000,
    onPayload: (fn) => { payloadFn = fn; },
  };
})();
