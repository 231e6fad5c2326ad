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
  const steps = K.questionSteps(questions, answers, {
    show: render,
    keys,
    unanswered: "Choose a relation or “no relation” first.",
    extra: (i) => ({subject_ok: answers[i].subject_ok, object_ok: answers[i].object_ok,
      link_ok: answers[i].link_ok}),
  });

  const $ = (id) => document.getElementById(id);

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
    const a = answers[steps.current];
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
    const a = answers[steps.current];
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

  function render() {
    const q = questions[steps.current];
    renderContext(q);
    $("pair-summary").replaceChildren("Which relation does the highlighted sentence state between ",
      mentionLabel(q.subject, "m-subj"), " and ", mentionLabel(q.object, "m-obj"), "?");
    renderOptions(q);
    renderChecks(q);
    steps.renderDots();
    steps.renderProgress();
  }

  function toggle(value) {
    if (!K.canAnswer) return;
    const c = answers[steps.current].choices;
    if (!K.toggleChoice(c, value, NONE)) return;  // at the cap: the status line says so
    render();
    const btn = document.querySelector('.option[data-value="' + value + '"]');
    if (btn) btn.focus();
  }

  function toggleCheck(id) {
    const box = document.getElementById(id);
    if (box && !box.disabled) { box.checked = !box.checked; box.dispatchEvent(new Event("change")); }
  }

  function keys(key) {
    const rels = questions[steps.current].options.filter((o) => o.value !== NONE);
    if (/^[1-9]$/.test(key) && Number(key) <= rels.length) toggle(rels[Number(key) - 1].value);
    else if (key === "0" || key === "n" || key === "N") toggle(NONE);
    else if (key === "s" || key === "S") toggleCheck("chk-subject_ok");
    else if (key === "o" || key === "O") toggleCheck("chk-object_ok");
    else if (key === "l" || key === "L") toggleCheck("chk-link_ok");
    else return false;
    return true;
  }

  render();
})();
