/* Relation verification: one or a few mention pairs, one question at a time. */
(function () {
  "use strict";
  const K = window.KBPO;
  const el = K.el;
  const questions = K.data.questions;
  const NONE = "no_relation";
  const answers = questions.map((q) => ({
    choices: new Set(),
    subject_ok: true,
    object_ok: true,
    link_ok: (q.subject.link || q.object.link) ? true : null,
    seconds: 0,
  }));
  let current = 0;
  let shownAt = performance.now();

  const $ = (id) => document.getElementById(id);

  function answered(i) { return answers[i].choices.size > 0; }
  function allAnswered() { return answers.every((a, i) => answered(i)); }

  function tick() {
    const now = performance.now();
    answers[current].seconds += (now - shownAt) / 1000;
    shownAt = now;
  }

  function mark(cls, tag, text) {
    return el("span", {class: cls}, text, el("span", {class: "m-tag", "aria-hidden": "true"}, tag));
  }

  function renderSentence(q, s) {
    // Split the target sentence around the subject and object (either may come first).
    const spans = [[q.subject, "m-subj", "S"], [q.object, "m-obj", "O"]]
      .sort((a, b) => a[0].begin - b[0].begin);
    const parts = [];
    let pos = s.begin;
    for (const [m, cls, tag] of spans) {
      if (m.begin < pos) continue;  // overlapping spans: keep the first highlight
      parts.push(s.text.slice(pos - s.begin, m.begin - s.begin));
      parts.push(mark(cls, tag, s.text.slice(m.begin - s.begin, m.end - s.begin)));
      pos = m.end;
    }
    parts.push(s.text.slice(pos - s.begin));
    return parts;
  }

  function renderContext(q) {
    const box = $("context");
    box.replaceChildren();
    const p = el("p");
    for (const s of q.context) {
      const span = el("span", {class: s.target ? "sent sent-target" : "sent"},
        s.target ? renderSentence(q, s) : s.text);
      p.append(span, " ");
    }
    box.append(p);
    $("doc-meta").replaceChildren(el("strong", {}, q.title || q.doc_id), q.title ? " · " + q.doc_id : "");
  }

  function mentionLabel(m, cls) {
    return el("span", {}, el("span", {class: cls}, m.text), el("span", {class: "type"}, m.type));
  }

  function renderOptions(q) {
    const a = answers[current];
    const box = $("options");
    box.replaceChildren();
    let n = 0;
    for (const opt of q.options) {
      const none = opt.value === NONE;
      const key = none ? "0" : String(++n);
      const btn = el("button", {
        type: "button", role: "checkbox", class: "option" + (none ? " option-none" : ""),
        "aria-checked": String(a.choices.has(opt.value)), "data-value": opt.value,
        "aria-disabled": K.capped(a.choices, opt.value, NONE) ? "true" : null,
        disabled: !K.canAnswer, onclick: () => toggle(opt.value)},
      el("kbd", {class: "opt-key"}, none ? "0" : key),
      el("span", {class: "opt-label"}, opt.label),
      el("span", {class: "opt-desc"}, opt.description, opt.example ? " " : "",
        opt.example ? el("em", {}, "e.g. “" + opt.example + "”") : ""));
      box.append(btn);
    }
  }

  function check(id, key, checked, label, onchange) {
    return el("label", {class: "check", for: id},
      el("input", {type: "checkbox", id, checked: checked, disabled: !K.canAnswer,
        onchange: (e) => onchange(e.target.checked)}),
      el("span", {}, label, " ", el("kbd", {}, key)));
  }

  function renderChecks(q) {
    const a = answers[current];
    const box = $("checks");
    box.replaceChildren();
    const items = [];
    for (const [m, field, key, cls] of [[q.subject, "subject_ok", "S", "m-subj"],
                                        [q.object, "object_ok", "O", "m-obj"]]) {
      if (!m.canonical) continue;
      items.push(check("chk-" + field, key, a[field],
        ["“", el("span", {class: cls}, m.text), "” refers to “" + m.canonical.text + "”",
          m.canonical.same_doc ? "" : " (named in " + m.canonical.doc_id + ")"],
        (v) => { a[field] = v; }));
    }
    const links = [q.subject, q.object].filter((m) => m.link);
    if (links.length) {
      const label = ["Wikipedia link right: "];
      links.forEach((m, i) => {
        if (i) label.push(", ");
        label.push(m.text + " → ", el("a", {href: K.wikiUrl(m.link), target: "_blank", rel: "noopener noreferrer"},
          m.link.replace(/^Wikipedia:/, "").replace(/_/g, " ")));
      });
      items.push(check("chk-link_ok", "L", a.link_ok, label, (v) => { a.link_ok = v; }));
    }
    if (items.length) box.append(el("h3", {}, "Optional checks — untick what is wrong"), ...items);
  }

  function renderDots() {
    const nav = $("dots");
    nav.replaceChildren();
    if (questions.length < 2) return;
    questions.forEach((q, i) => {
      nav.append(el("button", {type: "button", class: "dot" + (answered(i) ? " done" : "") +
        (i === current ? " current" : ""), "aria-label": "Question " + (i + 1) +
        (answered(i) ? " (answered)" : ""), "aria-current": i === current ? "step" : null,
        onclick: () => go(i)}, String(i + 1)));
    });
  }

  function render() {
    const q = questions[current];
    renderContext(q);
    $("pair-summary").replaceChildren("Which relation does the highlighted sentence state between ",
      mentionLabel(q.subject, "m-subj"), " and ", mentionLabel(q.object, "m-obj"), "?");
    renderOptions(q);
    renderChecks(q);
    renderDots();
    const done = answers.filter((a, i) => answered(i)).length;
    $("progress").textContent = "Question " + (current + 1) + " of " + questions.length +
      " · " + done + " answered";
    $("prev-btn").disabled = current === 0;
    $("next-btn").disabled = !answered(current) || current === questions.length - 1;
    K.setReady(allAnswered(), "Answer every question first (" + done + " of " + questions.length + " done)");
  }

  function toggle(value) {
    if (!K.canAnswer) return;
    const c = answers[current].choices;
    if (!K.toggleChoice(c, value, NONE)) return;  // at the cap: the status line says so
    render();
    const btn = document.querySelector('.option[data-value="' + value + '"]');
    if (btn) btn.focus();
  }

  function go(i) {
    if (i < 0 || i >= questions.length) return;
    tick();
    current = i;
    render();
  }

  function next() {
    if (!answered(current)) {
      K.setStatus("Choose a relation or “no relation” first.", "error");
      return;
    }
    K.setStatus("");
    const todo = answers.findIndex((a, i) => i > current && !answered(i));
    if (current < questions.length - 1) go(todo >= 0 ? todo : current + 1);
    else if (allAnswered()) document.getElementById("submit-btn").focus();
  }

  function toggleCheck(id) {
    const box = document.getElementById(id);
    if (box && !box.disabled) { box.checked = !box.checked; box.dispatchEvent(new Event("change")); }
  }

  document.addEventListener("keydown", (event) => {
    if (K.isTyping(event) || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    const q = questions[current];
    const rels = q.options.filter((o) => o.value !== NONE);
    if (/^[1-9]$/.test(key) && Number(key) <= rels.length) toggle(rels[Number(key) - 1].value);
    else if (key === "0" || key === "n" || key === "N") toggle(NONE);
    else if (key === "s" || key === "S") toggleCheck("chk-subject_ok");
    else if (key === "o" || key === "O") toggleCheck("chk-object_ok");
    else if (key === "l" || key === "L") toggleCheck("chk-link_ok");
    else if (key === "ArrowLeft") go(current - 1);
    else if (key === "ArrowRight") { if (answered(current)) go(current + 1); }
    else if (key === "Enter") {
      const t = event.target;
      if (t && (t.tagName === "BUTTON" || t.tagName === "A") && !t.classList.contains("option")) return;
      next();
    } else return;
    event.preventDefault();
  });

  $("prev-btn").addEventListener("click", () => go(current - 1));
  $("next-btn").addEventListener("click", next);

  K.onPayload(() => {
    tick();
    return questions.map((q, i) => ({
      question: q.id,
      choices: Array.from(answers[i].choices).sort(),
      extra: {subject_ok: answers[i].subject_ok, object_ok: answers[i].object_ok,
        link_ok: answers[i].link_ok},
      seconds: Math.round(answers[i].seconds * 10) / 10,
    }));
  });
  render();
})();
