/* Exhaustive facts on a DocRED document: the worker adds every (X, Y, relation) fact
 * whose head X is one of this task's head entities — choose X, find Y (by name or in
 * the text), find the relation (searchable, with definitions) and the fact is added;
 * the list shows what was added, each removable; every X is marked done before Submit.
 * A pair the worker did not add counts as "no relation". */
(function () {
  "use strict";
  const K = window.KBPO;
  const el = K.el;
  const data = K.data;
  const doc = data.document;
  const ents = doc.entities;
  const heads = doc.heads;
  const byId = new Map(data.relations.map((r) => [r.value, r]));
  const cap = Number.isInteger(K.cfg.max_relations) && K.cfg.max_relations > 0 ? K.cfg.max_relations : Infinity;
  const facts = [];            // {h, t, r} in the order added
  const done = new Set();      // heads marked done
  let head = heads[0];
  let tail = null;
  let lastAdded = null;
  const $ = (id) => document.getElementById(id);
  const tailBox = $("tail-filter");
  const relBox = $("rel-filter");

  const words = (box) => box.value.toLowerCase().split(/\s+/).filter(Boolean);
  const factKey = (f) => f.h + "|" + f.t + "|" + f.r;
  const has = (h, t, r) => facts.some((f) => f.h === h && f.t === t && f.r === r);

  /** Text of [begin, end) with its marks; a mark inside another is nested in it, one
   * crossing another's end is dropped (as on the relation page). */
  function marked(text, base, begin, end, marks) {
    const parts = [];
    let pos = begin;
    let i = 0;
    while (i < marks.length) {
      const [m, ent] = marks[i];
      let j = i + 1;
      while (j < marks.length && marks[j][0].begin < m.end) j++;
      if (m.begin >= pos) {
        const inner = marks.slice(i + 1, j).filter((x) => x[0].end <= m.end);
        parts.push(text.slice(pos - base, m.begin - base));
        const cls = ent.index === head ? "ent m-subj" : ent.index === tail ? "ent m-obj" : "ent gm";
        const tag = ent.index === head ? "X" : ent.index === tail ? "Y" : null;
        parts.push(el("span", {class: cls, "data-e": ent.index, title: ent.name + " (" + ent.type + ")"},
          marked(text, base, m.begin, m.end, inner),
          tag ? el("span", {class: "m-tag", "aria-hidden": "true"}, tag) : ""));
        pos = m.end;
      }
      i = j;
    }
    parts.push(text.slice(pos - base, end - base));
    return parts;
  }

  function renderDocument() {
    const p = el("p");
    for (const s of doc.sentences) {
      const marks = [];
      for (const ent of ents) {
        for (const m of ent.mentions) {
          if (m.begin >= s.begin && m.end <= s.end) marks.push([m, ent]);
        }
      }
      marks.sort((a, b) => a[0].begin - b[0].begin || b[0].end - a[0].end);
      p.append(el("span", {class: "sent"}, el("span", {class: "sent-no", "aria-hidden": "true"}, String(s.index + 1)),
        marked(s.text, s.begin, s.begin, s.end, marks)), " ");
    }
    $("context").replaceChildren(p);
  }

  function entityLabel(i, cls) {
    const e = ents[i];
    return el("span", {}, el("span", {class: cls}, nameOf(i)), el("span", {class: "type"}, e.type));
  }

  function renderHeads() {
    const box = $("heads");
    box.replaceChildren();
    heads.forEach((h, n) => {
      box.append(el("button", {type: "button", role: "radio", class: "fact-head" + (done.has(h) ? " is-done" : ""),
        "aria-checked": String(h === head), "data-e": h, disabled: !K.canAnswer,
        onclick: () => chooseHead(h)},
      el("kbd", {}, n < 9 ? String(n + 1) : "·"), " ", ents[h].name, el("span", {class: "type"}, ents[h].type),
      done.has(h) ? el("span", {class: "head-done-mark"}, " ✓") : ""));
    });
  }

  function tailMatches() {
    const ws = words(tailBox);
    return ents.filter((e) => e.index !== head && ws.every((w) =>
      (e.name + " " + e.type).toLowerCase().includes(w) || mentionTexts(e).some((t) => t.includes(w))));
  }

  // Two entities of one name (DocRED lists a few twice): told apart by a number.
  const sameName = new Map();
  for (const e of ents) sameName.set(e.name, (sameName.get(e.name) || []).concat([e.index]));
  function nameOf(i) {
    const twins = sameName.get(ents[i].name);
    return twins.length > 1 ? ents[i].name + " (" + (twins.indexOf(i) + 1) + ")" : ents[i].name;
  }

  const textOf = new Map();
  function mentionTexts(e) {
    if (!textOf.has(e.index)) {
      const out = [];
      for (const m of e.mentions) {
        const s = doc.sentences.find((x) => x.begin <= m.begin && m.end <= x.end);
        if (s) out.push(s.text.slice(m.begin - s.begin, m.end - s.begin).toLowerCase());
      }
      textOf.set(e.index, out);
    }
    return textOf.get(e.index);
  }

  function renderTails() {
    const box = $("tails");
    box.replaceChildren();
    for (const e of tailMatches()) {
      const n = facts.filter((f) => f.h === head && f.t === e.index).length;
      box.append(el("button", {type: "button", role: "option", class: "fact-tail",
        "aria-selected": String(e.index === tail), "data-e": e.index, disabled: !K.canAnswer,
        onclick: () => chooseTail(e.index)},
      nameOf(e.index), el("span", {class: "type"}, e.type), n ? el("span", {class: "fact-count"}, " · " + n + " added") : ""));
    }
    if (!box.children.length) box.append(el("p", {class: "muted"}, "No entity matches “" + tailBox.value.trim() + "”."));
  }

  function pairInfo() {
    if (tail === null) return null;
    return data.pairs[ents[head].type + "|" + ents[tail].type] || {usual: [], offered: null};
  }

  /** Relations on screen: offered for the pair, search results first-to-last, or (no
   * search) the ones usual for the pair's types, then the others. */
  function relMatches() {
    const info = pairInfo();
    let rels = data.relations;
    if (info && info.offered) rels = info.offered.map((v) => byId.get(v)).filter(Boolean);
    const ws = words(relBox);
    const usual = new Set(info ? info.usual : []);
    const shown = ws.length ? rels.filter((o) => ws.every((w) =>
      (o.label + " " + o.value + " " + o.description).toLowerCase().includes(w))) : rels;
    return shown.slice().sort((a, b) => (usual.has(b.value) ? 1 : 0) - (usual.has(a.value) ? 1 : 0));
  }

  function renderOptions() {
    const box = $("options");
    box.replaceChildren();
    if (tail === null) {
      box.append(el("p", {class: "muted"}, "Choose Y first: the relations for the pair are listed then."));
      $("chosen").textContent = "";
      return;
    }
    const info = pairInfo();
    const usual = new Set(info.usual);
    const ws = words(relBox);
    const shown = relMatches();
    let heading = "";
    shown.forEach((opt) => {
      const group = ws.length ? "search" : usual.has(opt.value) ? "usual" : "other";
      if (group !== heading) {
        heading = group;
        box.append(el("h3", {class: "opt-group"}, group === "search"
          ? shown.length + " relations match “" + relBox.value.trim() + "”"
          : group === "usual" ? "Usual for " + ents[head].type + " → " + ents[tail].type : "Other relations"));
      }
      const on = has(head, tail, opt.value);
      box.append(el("button", {type: "button", role: "checkbox", class: "option",
        "aria-checked": String(on), "data-value": opt.value, disabled: !K.canAnswer,
        onclick: () => chooseRelation(opt.value)},
      el("kbd", {class: "opt-key opt-key-blank"}, on ? "✓" : "+"),
      el("span", {class: "opt-label"}, opt.label, el("span", {class: "opt-id"}, " " + opt.value)),
      el("span", {class: "opt-desc"}, opt.description, opt.example ? " " : "",
        opt.example ? el("em", {}, "e.g. “" + opt.example + "”") : "")));
    });
    if (!shown.length) box.append(el("p", {class: "muted"}, "No relation matches “" + relBox.value.trim() + "”."));
    $("chosen").replaceChildren("X = ", entityLabel(head, "m-subj"), " → Y = ", entityLabel(tail, "m-obj"));
  }

  function renderFacts() {
    const ol = $("facts");
    ol.replaceChildren();
    facts.forEach((f, i) => {
      const r = byId.get(f.r);
      ol.append(el("li", {class: "fact" + (lastAdded === factKey(f) ? " fact-new" : ""), "data-fact": factKey(f)},
        el("span", {class: "m-subj"}, nameOf(f.h)), " ",
        el("strong", {}, r ? r.label : f.r), el("span", {class: "opt-id"}, " " + f.r), " ",
        el("span", {class: "m-obj"}, nameOf(f.t)), " ",
        el("button", {type: "button", class: "button button-small button-secondary fact-remove",
          "aria-label": "Remove: " + ents[f.h].name + " " + (r ? r.label : f.r) + " " + ents[f.t].name,
          disabled: !K.canAnswer, onclick: () => removeFact(i)}, "Remove")));
    });
    if (!facts.length) ol.append(el("li", {class: "muted fact-none"}, "None yet."));
    $("facts-title").textContent = "Facts you added (" + facts.length + ")";
    const box = $("done-list");
    box.replaceChildren();
    for (const h of heads) {
      const n = facts.filter((f) => f.h === h).length;
      const id = "done-" + h;
      box.append(el("label", {class: "fact-done-item", for: id},
        el("input", {type: "checkbox", id, checked: done.has(h), disabled: !K.canAnswer,
          onchange: (ev) => setDone(h, ev.target.checked)}),
        " Every fact of ", el("strong", {}, ents[h].name), " added (" + n + ")"));
    }
  }

  function render() {
    renderDocument();
    renderHeads();
    renderTails();
    renderOptions();
    renderFacts();
    $("done-btn").disabled = !K.canAnswer;
    $("done-btn").title = "Every fact of " + ents[head].name + " is added";
    $("doc-meta").replaceChildren(el("strong", {}, doc.title || doc.doc_id),
      " · " + doc.sentences.length + " sentences · " + ents.length + " entities · this task: " +
      heads.length + " of them as X");
    $("progress").textContent = done.size + "/" + heads.length + " X done · " + facts.length + (facts.length === 1 ? " fact" : " facts");
    K.setReady(done.size === heads.length, "Mark every X done first (" + done.size + " of " + heads.length + ")");
  }

  function chooseHead(h) {
    if (!K.canAnswer || !heads.includes(h)) return;
    head = h;
    if (tail === head) tail = null;
    render();
  }

  function chooseTail(t) {
    if (!K.canAnswer || t === head || t === null || t < 0 || t >= ents.length) return;
    tail = t;
    tailBox.value = "";
    relBox.value = "";
    render();
    relBox.focus();
  }

  function chooseRelation(r) {
    if (!K.canAnswer || tail === null) return;
    if (has(head, tail, r)) {  // chosen again: taken back
      removeFact(facts.findIndex((f) => f.h === head && f.t === tail && f.r === r));
      return;
    }
    if (facts.filter((f) => f.h === head && f.t === tail).length >= cap) {
      K.setStatus("At most " + cap + " relations per pair: remove one to add another.", "error");
      return;
    }
    const f = {h: head, t: tail, r};
    facts.push(f);
    lastAdded = factKey(f);
    done.delete(head);  // a new fact reopens its X
    K.setStatus("Added: " + ents[head].name + " — " + byId.get(r).label + " — " + ents[tail].name + ".", "ok");
    tail = null;
    relBox.value = "";
    tailBox.value = "";
    render();
    tailBox.focus();
  }

  function removeFact(i) {
    if (!K.canAnswer || i < 0 || i >= facts.length) return;
    const [f] = facts.splice(i, 1);
    done.delete(f.h);
    lastAdded = null;
    K.setStatus("Removed: " + ents[f.h].name + " — " + (byId.get(f.r) || {label: f.r}).label + " — " + ents[f.t].name + ".");
    render();
    const rest = document.querySelectorAll(".fact-remove");
    if (rest.length) rest[Math.min(i, rest.length - 1)].focus();
  }

  function setDone(h, value) {
    if (!K.canAnswer) return;
    if (value) done.add(h); else done.delete(h);
    render();
  }

  function doneWithHead() {
    if (!K.canAnswer) return;
    done.add(head);
    const next = heads.find((h) => !done.has(h));
    if (next !== undefined) {
      head = next;
      tail = null;
      K.setStatus("Now the facts of " + ents[head].name + ".");
    } else {
      K.setStatus("Every X is done: check the list, then Submit.", "ok");
    }
    render();
    if (next === undefined) document.getElementById("submit-btn").focus();
  }

  function undo() {
    if (facts.length) removeFact(facts.length - 1);
  }

  function focusResults(listId, step) {
    const items = Array.from(document.querySelectorAll("#" + listId + " button"));
    const at = items.indexOf(document.activeElement);
    const to = at + step;
    if (to < 0) (listId === "tails" ? tailBox : relBox).focus();
    else if (to < items.length) items[to].focus();
  }

  tailBox.addEventListener("input", renderTails);
  relBox.addEventListener("input", renderOptions);
  tailBox.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      tailBox.value = "";
      renderTails();
      tailBox.blur();
    } else if (event.key === "ArrowDown") {
      focusResults("tails", 1);
    } else if (event.key === "Enter" && !event.ctrlKey && !event.metaKey) {
      const first = tailMatches()[0];
      if (!words(tailBox).length || !first) return;
      chooseTail(first.index);
    } else return;
    event.preventDefault();
    event.stopPropagation();
  });
  relBox.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      relBox.value = "";
      tail = null;
      render();
      tailBox.focus();
    } else if (event.key === "ArrowDown") {
      focusResults("options", 1);
    } else if (event.key === "Enter" && !event.ctrlKey && !event.metaKey) {
      const first = relMatches()[0];
      if (!words(relBox).length || !first || tail === null) return;
      chooseRelation(first.value);
    } else return;
    event.preventDefault();
    event.stopPropagation();
  });

  // A click (or tap) on a name in the text takes its entity as Y.
  $("context").addEventListener("click", (event) => {
    const span = event.target.closest("[data-e]");
    if (!span) return;
    const e = Number(span.getAttribute("data-e"));
    if (e !== head) chooseTail(e);
  });

  document.addEventListener("keydown", (event) => {
    if (K.isTyping(event) || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    const inTails = document.activeElement && document.activeElement.closest && document.activeElement.closest("#tails");
    const inRels = document.activeElement && document.activeElement.closest && document.activeElement.closest("#options");
    if (/^[1-9]$/.test(key) && Number(key) <= heads.length) chooseHead(heads[Number(key) - 1]);
    else if (key === "/" || key === "t" || key === "T") { if (K.canAnswer) tailBox.focus(); }
    else if (key === "r" || key === "R") { if (K.canAnswer && tail !== null) relBox.focus(); }
    else if (key === "d" || key === "D") doneWithHead();
    else if (key === "u" || key === "U") undo();
    else if (key === "ArrowDown" && (inTails || inRels)) focusResults(inTails ? "tails" : "options", 1);
    else if (key === "ArrowUp" && (inTails || inRels)) focusResults(inTails ? "tails" : "options", -1);
    else if (key === "Escape" && inRels) { tail = null; render(); tailBox.focus(); }
    else if (key === "Escape" && inTails) tailBox.focus();
    else return;
    event.preventDefault();
  });

  $("done-btn").addEventListener("click", doneWithHead);

  K.onPayload(() => [{
    question: data.question, choices: ["done"],
    extra: {facts: facts.map((f) => ({h: f.h, t: f.t, r: f.r}))},
    seconds: Math.round(K.elapsed() * 10) / 10,
  }]);

  render();
})();
