/* Relation verification on document-level pairs (DocRED): the whole document with every
 * mention of X (head) and Y (tail), the relations usual for their types first, all of
 * them searchable, "none of these". One question at a time. */
(function () {
  "use strict";
  const K = window.KBPO;
  const el = K.el;
  const questions = K.data.questions;
  const NONE = "no_relation";
  const answers = questions.map(() => ({choices: new Set(), seconds: 0}));
  let current = 0;
  let shownAt = performance.now();
  let showAll = false;
  const $ = (id) => document.getElementById(id);
  const filterBox = $("rel-filter");

  function answered(i) { return answers[i].choices.size > 0; }
  function allAnswered() { return answers.every((a, i) => answered(i)); }
  function tick() {
    const now = performance.now();
    answers[current].seconds += (now - shownAt) / 1000;
    shownAt = now;
  }

  /** Text of [begin, end) with its marks; a mark inside another is nested in it (DocRED
   * mentions nest: "Byron" inside "Ada Byron"), one crossing another's end is dropped. */
  function marked(text, base, begin, end, marks) {
    const parts = [];
    let pos = begin;
    let i = 0;
    while (i < marks.length) {
      const [m, cls, tag] = marks[i];
      let j = i + 1;
      while (j < marks.length && marks[j][0].begin < m.end) j++;
      if (m.begin >= pos) {
        const inner = marks.slice(i + 1, j).filter((x) => x[0].end <= m.end);
        parts.push(text.slice(pos - base, m.begin - base));
        parts.push(el("span", {class: cls}, marked(text, base, m.begin, m.end, inner),
          el("span", {class: "m-tag", "aria-hidden": "true"}, tag)));
        pos = m.end;
      }
      i = j;
    }
    parts.push(text.slice(pos - base, end - base));
    return parts;
  }

  function renderSentence(q, s) {
    const marks = [];
    for (const [ent, cls, tag] of [[q.head, "m-subj", "X"], [q.tail, "m-obj", "Y"]]) {
      for (const m of ent.mentions) {
        if (m.begin >= s.begin && m.end <= s.end && m.end > m.begin) marks.push([m, cls, tag]);
      }
    }
    marks.sort((a, b) => a[0].begin - b[0].begin || b[0].end - a[0].end);
    return [el("span", {class: "sent-no", "aria-hidden": "true"}, String(s.index + 1)),
      ...marked(s.text, s.begin, s.begin, s.end, marks)];
  }

  function renderDocument(q) {
    const p = el("p");
    for (const s of q.sentences) {
      p.append(el("span", {class: "sent" + (s.evidence ? " sent-evidence" : ""),
        title: s.evidence ? "A system cited this sentence" : null}, renderSentence(q, s)), " ");
    }
    $("context").replaceChildren(p);
    const cited = q.sentences.filter((s) => s.evidence).length;
    $("doc-meta").replaceChildren(el("strong", {}, q.title || q.doc_id),
      " · " + q.sentences.length + " sentences",
      cited ? " · shaded: cited as evidence" : "");
  }

  function entityLabel(ent, cls, letter) {
    return el("span", {}, letter + " = ", el("span", {class: cls}, ent.name),
      el("span", {class: "type"}, ent.type));
  }

  function words() { return filterBox.value.toLowerCase().split(/\s+/).filter(Boolean); }

  function matches(opt, ws) {
    const hay = (opt.label + " " + opt.value + " " + opt.description).toLowerCase();
    return ws.every((w) => hay.includes(w));
  }

  /** The options on screen, in order: the search results, or the usual relations (and
   * all the others once asked for); chosen ones always; "none of these" last. */
  function visible(q) {
    const chosen = answers[current].choices;
    const ws = words();
    const rels = q.options.filter((o) => o.value !== NONE);
    const anyUsual = rels.some((o) => o.candidate);
    const shown = rels.filter((o) => chosen.has(o.value) ||
      (ws.length ? matches(o, ws) : (o.candidate || showAll || !anyUsual)));
    return shown.concat(q.options.filter((o) => o.value === NONE));
  }

  function optionButton(opt, key) {
    const a = answers[current];
    const none = opt.value === NONE;
    return el("button", {
      type: "button", role: "checkbox", class: "option" + (none ? " option-none" : ""),
      "aria-checked": String(a.choices.has(opt.value)), "data-value": opt.value,
      "aria-disabled": K.capped(a.choices, opt.value, NONE) ? "true" : null,
      disabled: !K.canAnswer, onclick: () => toggle(opt.value)},
    el("kbd", {class: "opt-key" + (key ? "" : " opt-key-blank")}, key || "·"),
    el("span", {class: "opt-label"}, opt.label,
      none ? "" : el("span", {class: "opt-id"}, " " + opt.value)),
    el("span", {class: "opt-desc"}, opt.description, opt.example ? " " : "",
      opt.example ? el("em", {}, "e.g. “" + opt.example + "”") : ""));
  }

  function renderOptions(q) {
    const box = $("options");
    box.replaceChildren();
    const shown = visible(q);
    const rels = q.options.filter((o) => o.value !== NONE);
    let n = 0;
    let heading = "";
    const ws = words();
    for (const opt of shown) {
      const none = opt.value === NONE;
      const group = ws.length ? "search" : none ? "none" : opt.candidate ? "usual" : "other";
      if (group !== heading && group !== "none") {
        heading = group;
        const count = shown.filter((o) => o.value !== NONE).length;
        box.append(el("h3", {class: "opt-group"}, group === "search"
          ? count + " of " + rels.length + " relations match “" + filterBox.value.trim() + "”"
          : group === "usual" ? "Usual for " + q.head.type + " → " + q.tail.type
            : "Other relations"));
      }
      if (none && !ws.length && !showAll && rels.some((o) => !o.candidate && !answers[current].choices.has(o.value))) {
        box.append(el("button", {type: "button", class: "button button-small button-secondary show-all",
          onclick: () => { showAll = true; render(); }},
        "Show all " + rels.length + " relations ", el("kbd", {}, "A")));
      }
      box.append(optionButton(opt, none ? "0" : (++n <= 9 ? String(n) : "")));
    }
    const labels = q.options.filter((o) => answers[current].choices.has(o.value)).map((o) => o.label);
    $("chosen").textContent = labels.length ? "Your answer: " + labels.join(", ") : "";
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
    renderDocument(q);
    $("pair-summary").replaceChildren("Which relation does the document state from ",
      entityLabel(q.head, "m-subj", "X"), " to ", entityLabel(q.tail, "m-obj", "Y"), "?");
    renderOptions(q);
    renderDots();
    const done = answers.filter((a, i) => answered(i)).length;
    $("progress").textContent = "Question " + (current + 1) + " of " + questions.length +
      " · " + done + " answered";
    $("prev-btn").disabled = current === 0;
    $("next-btn").disabled = !answered(current) || current === questions.length - 1;
    filterBox.disabled = !K.canAnswer;
    K.setReady(allAnswered(), "Answer every question first (" + done + " of " + questions.length + " done)");
  }

  function toggle(value) {
    if (!K.canAnswer) return;
    if (!K.toggleChoice(answers[current].choices, value, NONE)) return;  // at the cap
    render();
    const btn = document.querySelector('.option[data-value="' + value + '"]');
    if (btn && document.activeElement !== filterBox) btn.focus();
  }

  function go(i) {
    if (i < 0 || i >= questions.length) return;
    tick();
    current = i;
    filterBox.value = "";
    render();
    window.scrollTo(0, 0);
  }

  function next() {
    if (!answered(current)) {
      K.setStatus("Choose a relation or “none of these” first.", "error");
      return;
    }
    K.setStatus("");
    const todo = answers.findIndex((a, i) => i > current && !answered(i));
    if (current < questions.length - 1) go(todo >= 0 ? todo : current + 1);
    else if (allAnswered()) $("submit-btn").focus();
  }

  function moveFocus(step) {
    const opts = Array.from(document.querySelectorAll("#options .option"));
    const at = opts.indexOf(document.activeElement);
    if (at < 0 && step < 0) return;
    const to = at + step;
    if (to < 0) filterBox.focus();
    else if (to < opts.length) opts[to].focus();
  }

  filterBox.addEventListener("input", () => renderOptions(questions[current]));
  filterBox.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      filterBox.value = "";
      renderOptions(questions[current]);
      filterBox.blur();
    } else if (event.key === "ArrowDown") {
      moveFocus(1);
    } else if (event.key === "Enter" && !event.ctrlKey && !event.metaKey) {
      // The best match: the first listed relation, chosen; the search is done.
      const first = visible(questions[current]).find((o) => o.value !== NONE);
      if (!words().length || !first) return;
      filterBox.value = "";
      filterBox.blur();
      if (!answers[current].choices.has(first.value)) toggle(first.value);
      else renderOptions(questions[current]);
    } else return;
    event.preventDefault();
    event.stopPropagation();
  });

  document.addEventListener("keydown", (event) => {
    if (K.isTyping(event) || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    const numbered = visible(questions[current]).filter((o) => o.value !== NONE).slice(0, 9);
    if (/^[1-9]$/.test(key) && Number(key) <= numbered.length) toggle(numbered[Number(key) - 1].value);
    else if (key === "0" || key === "n" || key === "N") toggle(NONE);
    else if (key === "/" || key === "f" || key === "F") { if (K.canAnswer) filterBox.focus(); }
    else if (key === "a" || key === "A") { showAll = !showAll; renderOptions(questions[current]); }
    else if (key === "ArrowDown" || key === "j") moveFocus(1);
    else if (key === "ArrowUp" || key === "k") moveFocus(-1);
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
    // The same answer as a sentence-level relation question: nothing to check here.
    return questions.map((q, i) => ({
      question: q.id,
      choices: Array.from(answers[i].choices).sort(),
      extra: {subject_ok: true, object_ok: true, link_ok: null},
      seconds: Math.round(answers[i].seconds * 10) / 10,
    }));
  });
  render();
})();
