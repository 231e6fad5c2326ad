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
  let showAll = false;
  const $ = (id) => document.getElementById(id);
  const filterBox = $("rel-filter");
  const steps = K.questionSteps(questions, answers, {
    show: () => {
      filterBox.value = "";
      render();
      window.scrollTo(0, 0);
    },
    keys,
    unanswered: "Choose a relation or “none of these” first.",
    // The same answer as a sentence-level relation question: nothing to check here.
    extra: () => ({subject_ok: true, object_ok: true, link_ok: null}),
  });

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
    const chosen = answers[steps.current].choices;
    const ws = words();
    const rels = q.options.filter((o) => o.value !== NONE);
    const anyUsual = rels.some((o) => o.candidate);
    const shown = rels.filter((o) => chosen.has(o.value) ||
      (ws.length ? matches(o, ws) : (o.candidate || showAll || !anyUsual)));
    return shown.concat(q.options.filter((o) => o.value === NONE));
  }

  function optionButton(opt, key) {
    const a = answers[steps.current];
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
      if (none && !ws.length && !showAll && rels.some((o) => !o.candidate && !answers[steps.current].choices.has(o.value))) {
        box.append(el("button", {type: "button", class: "button button-small button-secondary show-all",
          onclick: () => { showAll = true; render(); }},
        "Show all " + rels.length + " relations ", el("kbd", {}, "A")));
      }
      box.append(optionButton(opt, none ? "0" : (++n <= 9 ? String(n) : "")));
    }
    const labels = q.options.filter((o) => answers[steps.current].choices.has(o.value)).map((o) => o.label);
    $("chosen").textContent = labels.length ? "Your answer: " + labels.join(", ") : "";
  }

  function render() {
    const q = questions[steps.current];
    renderDocument(q);
    $("pair-summary").replaceChildren("Which relation does the document state from ",
      entityLabel(q.head, "m-subj", "X"), " to ", entityLabel(q.tail, "m-obj", "Y"), "?");
    renderOptions(q);
    steps.renderDots();
    filterBox.disabled = !K.canAnswer;
    steps.renderProgress();
  }

  function toggle(value) {
    if (!K.canAnswer) return;
    if (!K.toggleChoice(answers[steps.current].choices, value, NONE)) return;  // at the cap
    render();
    const btn = document.querySelector('.option[data-value="' + value + '"]');
    if (btn && document.activeElement !== filterBox) btn.focus();
  }

  function moveFocus(step) {
    const opts = Array.from(document.querySelectorAll("#options .option"));
    const at = opts.indexOf(document.activeElement);
    if (at < 0 && step < 0) return;
    const to = at + step;
    if (to < 0) filterBox.focus();
    else if (to < opts.length) opts[to].focus();
  }

  filterBox.addEventListener("input", () => renderOptions(questions[steps.current]));
  filterBox.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      filterBox.value = "";
      renderOptions(questions[steps.current]);
      filterBox.blur();
    } else if (event.key === "ArrowDown") {
      moveFocus(1);
    } else if (event.key === "Enter" && !event.ctrlKey && !event.metaKey) {
      // The best match: the first listed relation, chosen; the search is done.
      const first = visible(questions[steps.current]).find((o) => o.value !== NONE);
      if (!words().length || !first) return;
      filterBox.value = "";
      filterBox.blur();
      if (!answers[steps.current].choices.has(first.value)) toggle(first.value);
      else renderOptions(questions[steps.current]);
    } else return;
    event.preventDefault();
    event.stopPropagation();
  });

  function keys(key) {
    const numbered = visible(questions[steps.current]).filter((o) => o.value !== NONE).slice(0, 9);
    if (/^[1-9]$/.test(key) && Number(key) <= numbered.length) toggle(numbered[Number(key) - 1].value);
    else if (key === "0" || key === "n" || key === "N") toggle(NONE);
    else if (key === "/" || key === "f" || key === "F") { if (K.canAnswer) filterBox.focus(); }
    else if (key === "a" || key === "A") { showAll = !showAll; renderOptions(questions[steps.current]); }
    else if (key === "ArrowDown" || key === "j") moveFocus(1);
    else if (key === "ArrowUp" || key === "k") moveFocus(-1);
    else return false;
    return true;
  }

  render();
})();
