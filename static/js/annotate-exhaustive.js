/* Exhaustive relations: every candidate pair of one document, judged one after another. */
(function () {
  "use strict";
  const K = window.KBPO;
  const el = K.el;
  const doc = K.data.document;
  const pairs = doc.pairs;
  const NONE = "no_relation";
  const choices = pairs.map(() => new Set());
  let current = 0;
  const $ = (id) => document.getElementById(id);
  const sentEls = [];

  function answered(i) { return choices[i].size > 0; }
  function doneCount() { return choices.filter((c) => c.size > 0).length; }

  function buildText() {
    // Sentences as spans; mentions underlined; the current pair highlighted on render.
    const box = $("doc-text");
    box.replaceChildren();
    let p = el("p");
    let prevEnd = 0;
    doc.sentences.forEach((s, si) => {
      const gap = doc.text.slice(prevEnd, s.begin);
      if (si > 0 && /\n/.test(gap)) { box.append(p); p = el("p"); } else if (si > 0) p.append(" ");
      const span = el("span", {class: "sent", "data-s": si});
      sentEls[si] = span;
      p.append(span);
      prevEnd = s.end;
    });
    box.append(p);
    $("doc-meta").replaceChildren(el("strong", {}, doc.title || doc.doc_id), doc.title ? " · " + doc.doc_id : "",
      " · ", String(doc.mentions.length), " mentions · ", String(pairs.length), " pairs");
  }

  function fillSentence(si, pair) {
    const s = doc.sentences[si];
    const span = sentEls[si];
    span.replaceChildren();
    const ms = doc.mentions.filter((m) => m.begin >= s.begin && m.end <= s.end);
    let pos = s.begin;
    for (const m of ms) {
      if (m.begin < pos) continue;
      span.append(doc.text.slice(pos, m.begin));
      let cls = "gm";
      let tag = null;
      if (pair && m.begin === pair.subject.begin && m.end === pair.subject.end) { cls = "m-subj"; tag = "S"; }
      else if (pair && m.begin === pair.object.begin && m.end === pair.object.end) { cls = "m-obj"; tag = "O"; }
      span.append(el("span", {class: cls, title: m.type}, doc.text.slice(m.begin, m.end),
        tag ? el("span", {class: "m-tag", "aria-hidden": "true"}, tag) : ""));
      pos = m.end;
    }
    span.append(doc.text.slice(pos, s.end));
    span.className = "sent " + (pair ? "sent-current" : "sent-other");
  }

  function answerText(i) {
    if (!answered(i)) return ["todo", "—"];
    if (choices[i].has(NONE)) return ["none", "no relation"];
    return ["", Array.from(choices[i]).map((c) => c.split(":")[1].replace(/_/g, " ")).join(", ")];
  }

  function renderList() {
    const ol = $("pair-list");
    ol.replaceChildren();
    pairs.forEach((p, i) => {
      const [cls, text] = answerText(i);
      const li = el("li", {class: i === current ? "current" : "", "data-i": i,
        "aria-current": i === current ? "true" : null, onclick: () => go(i)},
        p.subject.text + " — " + p.object.text + ": ", el("span", {class: "ans " + cls}, text));
      ol.append(li);
    });
    // Scroll the list box only (scrollIntoView would scroll the whole page too).
    const cur = ol.children[current];
    const card = ol.closest(".pair-list-card");
    if (cur && card) {
      const top = cur.offsetTop - card.offsetTop;
      if (top < card.scrollTop || top > card.scrollTop + card.clientHeight - cur.offsetHeight) {
        card.scrollTop = Math.max(0, top - card.clientHeight / 2);
      }
    }
  }

  function renderOptions() {
    const box = $("options");
    box.replaceChildren();
    if (!pairs.length) {
      box.append(el("p", {class: "muted"}, "This document has no pair of mentions that could hold a relation. Submit as it is."));
      return;
    }
    const p = pairs[current];
    let n = 0;
    for (const opt of p.options) {
      const none = opt.value === NONE;
      const key = none ? "0" : String(++n);
      box.append(el("button", {type: "button", role: "checkbox", class: "option" + (none ? " option-none" : ""),
        "aria-checked": String(choices[current].has(opt.value)), "data-value": opt.value,
        "aria-disabled": K.capped(choices[current], opt.value, NONE) ? "true" : null,
        disabled: !K.canAnswer, onclick: () => toggle(opt.value)},
      el("kbd", {class: "opt-key"}, key),
      el("span", {class: "opt-label"}, opt.label),
      el("span", {class: "opt-desc"}, opt.description, opt.example ? " " : "",
        opt.example ? el("em", {}, "e.g. “" + opt.example + "”") : "")));
    }
  }

  let lastSentence = null;
  function render() {
    const p = pairs[current];
    if (lastSentence !== null) fillSentence(lastSentence, null);
    if (p) {
      fillSentence(p.sentence, p);
      lastSentence = p.sentence;
      sentEls[p.sentence].scrollIntoView({block: "nearest"});
      $("pair-summary").replaceChildren("Pair " + (current + 1) + " of " + pairs.length + ": what does the sentence say about ",
        el("span", {class: "m-subj"}, p.subject.text), el("span", {class: "type"}, " " + p.subject.type), " and ",
        el("span", {class: "m-obj"}, p.object.text), el("span", {class: "type"}, " " + p.object.type), "?");
    } else {
      $("pair-summary").textContent = "No pairs to judge.";
    }
    renderOptions();
    renderList();
    $("progress").textContent = doneCount() + " of " + pairs.length + " pairs answered";
    $("prev-btn").disabled = current === 0;
    $("next-btn").disabled = !pairs.length || !answered(current);
    K.setReady(doneCount() === pairs.length, "Answer every pair first (" + doneCount() + " of " + pairs.length + ")");
  }

  function toggle(value) {
    if (!K.canAnswer || !pairs.length) return;
    const c = choices[current];
    if (!K.toggleChoice(c, value, NONE)) return;  // at the cap: the status line says so
    render();
  }

  function go(i) {
    if (i < 0 || i >= pairs.length) return;
    current = i;
    render();
  }

  function next() {
    if (!pairs.length) return;
    if (!answered(current)) { K.setStatus("Choose a relation or “no relation” first.", "error"); return; }
    K.setStatus("");
    const todo = choices.findIndex((c, i) => i > current && c.size === 0);
    const wrap = choices.findIndex((c) => c.size === 0);
    if (todo >= 0) go(todo);
    else if (wrap >= 0) go(wrap);
    else document.getElementById("submit-btn").focus();
  }

  document.addEventListener("keydown", (event) => {
    if (K.isTyping(event) || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    const p = pairs[current];
    const rels = p ? p.options.filter((o) => o.value !== NONE) : [];
    if (/^[1-9]$/.test(key) && Number(key) <= rels.length) toggle(rels[Number(key) - 1].value);
    else if (key === "0" || key === "n" || key === "N") toggle(NONE);
    else if (key === "ArrowDown" || key === "j" || key === "J") go(current + 1);
    else if (key === "ArrowUp" || key === "k" || key === "K") go(current - 1);
    else if (key === "Enter") {
      if (K.enterIsOwn(event)) return;
      next();
    } else return;
    event.preventDefault();
  });

  $("prev-btn").addEventListener("click", () => go(current - 1));
  $("next-btn").addEventListener("click", next);

  K.onPayload(() => [{
    question: K.data.question, choices: ["done"],
    extra: {relations: pairs.map((p, i) => ({
      subject: [p.subject.begin, p.subject.end], object: [p.object.begin, p.object.end],
      choices: Array.from(choices[i]).sort()}))},
    seconds: Math.round(K.elapsed() * 10) / 10,
  }]);

  buildText();
  doc.sentences.forEach((s, si) => fillSentence(si, null));
  render();
})();
