/* Entity detection & linking: token-snapped spans, typed by click or hotkey, grouped
 * into entities (one canonical mention each), optionally linked to Wikipedia. */
(function () {
  "use strict";
  const K = window.KBPO;
  const el = K.el;
  const doc = K.data.document;
  const TYPES = [["PER", "p", "Person"], ["ORG", "o", "Organisation"], ["GPE", "g", "Place (GPE)"],
                 ["DATE", "d", "Date"], ["TITLE", "t", "Title"]];
  const TYPE_BY_KEY = Object.fromEntries(TYPES.map(([t, k]) => [k, t]));
  const $ = (id) => document.getElementById(id);

  // Tokens, in document order, with their sentence.
  const toks = [];
  const sentRange = [];
  doc.sentences.forEach((s, si) => {
    const first = toks.length;
    for (let i = 0; i < s.tokens.length; i += 2) toks.push({b: s.tokens[i], e: s.tokens[i + 1], s: si});
    sentRange.push([first, toks.length - 1]);
  });
  const tokText = toks.map((t) => doc.text.slice(t.b, t.e));
  const tokEls = [];
  const wsEls = [];  // wsEls[i]: whitespace between token i and i+1 of the same sentence

  const mentions = new Map();  // id -> {id, t0, t1, entity}
  const entities = new Map();  // id -> {id, type, canonical, link}
  const tokMention = new Array(toks.length).fill(null);
  let nextId = 1;
  let cursor = 0;
  let anchor = null;  // selection = [min(anchor, cursor), max(...)] while not null
  let active = null;  // mention being edited
  let dragging = false;
  let clickedMention = null;

  // --- Rendering the text once --------------------------------------------------------
  function buildText() {
    const box = $("doc-text");
    box.replaceChildren();
    let p = el("p");
    let prevEnd = 0;
    doc.sentences.forEach((s, si) => {
      const gap = doc.text.slice(prevEnd, s.begin);
      if (si > 0 && /\n/.test(gap)) { box.append(p); p = el("p"); } else if (si > 0) p.append(" ");
      const [first, last] = sentRange[si];
      const sent = el("span", {class: "sent", "data-s": si});
      for (let i = first; i <= last; i++) {
        const t = el("span", {class: "tok", "data-t": i}, tokText[i]);
        tokEls[i] = t;
        sent.append(t);
        if (i < last) {
          const ws = el("span", {class: "ws"}, doc.text.slice(toks[i].e, toks[i + 1].b));
          wsEls[i] = ws;
          sent.append(ws);
        }
      }
      p.append(sent);
      prevEnd = s.end;
    });
    box.append(p);
    $("doc-meta").replaceChildren(el("strong", {}, doc.title || doc.doc_id), doc.title ? " · " + doc.doc_id : "",
      " · ", String(doc.sentences.length), " sentences");
  }

  function selection() {
    if (anchor === null) return null;
    return [Math.min(anchor, cursor), Math.max(anchor, cursor)];
  }

  function spanText(t0, t1) { return doc.text.slice(toks[t0].b, toks[t1].e); }

  function paint() {
    const sel = selection();
    const act = active !== null ? mentions.get(active) : null;
    const hlEntity = act ? act.entity : null;
    for (let i = 0; i < toks.length; i++) {
      const mid = tokMention[i];
      const m = mid !== null ? mentions.get(mid) : null;
      const cls = ["tok"];
      if (m) {
        cls.push("in-m", "t-" + entities.get(m.entity).type);
        if (i === m.t0) cls.push("m-first");
        if (i === m.t1) cls.push("m-last");
        if (mid === active) cls.push("active-m");
        else if (m.entity === hlEntity) cls.push("hl-entity");
      }
      if (sel && i >= sel[0] && i <= sel[1]) cls.push("sel");
      if (i === cursor) cls.push("cursor");
      tokEls[i].className = cls.join(" ");
      if (m && i === m.t1) tokEls[i].setAttribute("data-type", entities.get(m.entity).type);
      else tokEls[i].removeAttribute("data-type");
      const ws = wsEls[i];
      if (ws) {
        const same = m && tokMention[i + 1] === mid;
        ws.className = "ws" + (same ? " in-m t-" + entities.get(m.entity).type : "") +
          (sel && i >= sel[0] && i < sel[1] ? " sel" : "");
      }
    }
  }

  // --- Model operations -----------------------------------------------------------------
  function entityName(ent) {
    const m = mentions.get(ent.canonical);
    return m ? spanText(m.t0, m.t1) : "?";
  }

  function mentionsOf(entId) {
    return Array.from(mentions.values()).filter((m) => m.entity === entId).sort((a, b) => a.t0 - b.t0);
  }

  function newEntity(type) {
    const ent = {id: nextId++, type, canonical: null, link: ""};
    entities.set(ent.id, ent);
    return ent;
  }

  function guessEntity(t0, t1, type) {
    // Repeated names: the same words already marked, or a surname of a marked person.
    const text = spanText(t0, t1);
    let best = null;
    for (const m of mentions.values()) {
      const ent = entities.get(m.entity);
      if (type && ent.type !== type) continue;
      if (spanText(m.t0, m.t1) === text) return ent;
    }
    if (t0 === t1 && /^[A-Z]/.test(text)) {
      for (const ent of entities.values()) {
        if (type && ent.type !== type) continue;
        if (!["PER", "ORG"].includes(ent.type)) continue;
        const words = entityName(ent).split(/\s+/);
        if (words.length > 1 && words.includes(text)) { best = ent; break; }
      }
    }
    return best;
  }

  function addMention(t0, t1, type, ent) {
    for (let i = t0; i <= t1; i++) {
      if (tokMention[i] !== null) {
        K.setStatus("That span overlaps a marked mention: remove or edit the mention first.", "error");
        return null;
      }
    }
    if (toks[t0].s !== toks[t1].s) {
      K.setStatus("A mention stays inside one sentence.", "error");
      return null;
    }
    ent = ent || guessEntity(t0, t1, type) || newEntity(type);
    const m = {id: nextId++, t0, t1, entity: ent.id};
    mentions.set(m.id, m);
    for (let i = t0; i <= t1; i++) tokMention[i] = m.id;
    if (ent.canonical === null) ent.canonical = m.id;
    $("no-mentions").checked = false;
    K.setStatus("Marked “" + spanText(t0, t1) + "” as " + ent.type + " → " + entityName(ent) + ".", "ok");
    return m;
  }

  function dropFromEntity(m) {
    const ent = entities.get(m.entity);
    if (ent.canonical === m.id) {
      const rest = mentionsOf(ent.id).filter((x) => x.id !== m.id);
      ent.canonical = rest.length ? rest[0].id : null;
    }
    if (ent.canonical === null) entities.delete(ent.id);
  }

  function removeMention(id) {
    const m = mentions.get(id);
    if (!m) return;
    dropFromEntity(m);
    mentions.delete(id);
    for (let i = m.t0; i <= m.t1; i++) tokMention[i] = null;
    if (active === id) active = null;
    K.setStatus("Removed “" + spanText(m.t0, m.t1) + "”.");
  }

  function moveTo(m, ent) {
    if (m.entity === ent.id) return;
    dropFromEntity(m);
    m.entity = ent.id;
    if (ent.canonical === null) ent.canonical = m.id;
  }

  function setType(m, type) {
    const ent = entities.get(m.entity);
    if (ent.type === type) return;
    if (mentionsOf(ent.id).length === 1) { ent.type = type; return; }
    moveTo(m, guessEntity(m.t0, m.t1, type) || newEntity(type));
  }

  function sameTypeEntities(type, exclude) {
    return Array.from(entities.values()).filter((e) => e.type === type && e.id !== exclude)
      .sort((a, b) => mentions.get(a.canonical).t0 - mentions.get(b.canonical).t0);
  }

  // --- Suggestions for repeated names ------------------------------------------------------
  function suggestions() {
    const out = [];
    const taken = new Set();
    for (const ent of entities.values()) {
      const seqs = new Map();
      for (const m of mentionsOf(ent.id)) seqs.set(spanText(m.t0, m.t1), tokText.slice(m.t0, m.t1 + 1));
      if (ent.type === "PER") {
        const words = entityName(ent).split(/\s+/);
        const last = words[words.length - 1];
        if (words.length > 1 && /^[A-Z]\S+$/.test(last)) seqs.set(last, [last]);
      }
      for (const seq of seqs.values()) {
        for (let i = 0; i + seq.length <= toks.length; i++) {
          let ok = true;
          for (let j = 0; j < seq.length && ok; j++) {
            ok = tokText[i + j] === seq[j] && tokMention[i + j] === null && toks[i + j].s === toks[i].s;
          }
          if (ok && !taken.has(i)) {
            // A one-word surname inside a longer capitalised name is not a repeat.
            if (seq.length === 1 && ((i > 0 && /^[A-Z]/.test(tokText[i - 1]) && toks[i - 1].s === toks[i].s && i - 1 !== sentRange[toks[i].s][0]) ||
                (i + 1 < toks.length && /^[A-Z]/.test(tokText[i + 1]) && toks[i + 1].s === toks[i].s))) continue;
            for (let j = 0; j < seq.length; j++) taken.add(i + j);
            out.push({t0: i, t1: i + seq.length - 1, entity: ent.id});
          }
        }
      }
    }
    return out.sort((a, b) => a.t0 - b.t0);
  }

  function acceptSuggestion(s) {
    const ent = entities.get(s.entity);
    if (ent) addMention(s.t0, s.t1, ent.type, ent);
  }

  function acceptAll() {
    const list = suggestions();
    for (const s of list) acceptSuggestion(s);
    if (list.length) K.setStatus("Added " + list.length + " repeated name(s).", "ok");
    update();
  }

  // --- Side panel -------------------------------------------------------------------------
  function typeButtons(pressed, onpick) {
    return el("div", {class: "type-buttons", role: "group", "aria-label": "Type"},
      TYPES.map(([t, k, label]) => el("button", {
        type: "button", class: "type-btn t-" + t, "data-type": t, title: label,
        "aria-pressed": pressed === t ? "true" : "false", disabled: !K.canAnswer,
        onclick: () => onpick(t)}, el("kbd", {}, k.toUpperCase()), " " + label)));
  }

  // Narrow screens stack the panel under the whole document: the editor of a mention
  // being marked is then a sheet above the footer (CSS `#editor.editing`), and the
  // tapped words are kept in view above it.
  const narrow = window.matchMedia("(max-width: 900px)");

  function placeSheet(box, t0) {
    const editing = narrow.matches && t0 !== null;
    box.classList.toggle("editing", editing);
    if (!editing) return;
    const footer = document.querySelector(".task-footer");
    box.style.bottom = ((footer ? footer.offsetHeight : 0) + 8) + "px";
    const word = tokEls[t0].getBoundingClientRect();
    const sheetTop = box.getBoundingClientRect().top;
    if (word.bottom > sheetTop - 8 || word.top < 0) {
      window.scrollBy(0, word.top - Math.max(8, (sheetTop - word.height) / 2));
    }
  }

  function renderEditor() {
    const box = $("editor");
    box.replaceChildren();
    const sel = selection();
    const focusTok = active !== null ? mentions.get(active).t0 : (sel ? sel[0] : null);
    if (active !== null) {
      const m = mentions.get(active);
      const ent = entities.get(m.entity);
      box.append(el("h2", {}, "Mention “" + spanText(m.t0, m.t1) + "”"), typeButtons(ent.type, (t) => {
        setType(m, t); update(); }));
      const others = sameTypeEntities(ent.type, ent.id);
      const list = el("ul", {class: "entity-choices", "aria-label": "Entity"});
      list.append(el("li", {}, el("button", {type: "button", class: "entity-choice", "aria-pressed": "true"},
        el("span", {class: "muted"}, "now:"), el("strong", {}, entityName(ent)),
        ent.canonical === m.id ? " ★" : "")));
      others.slice(0, 9).forEach((e, i) => list.append(el("li", {}, el("button", {
        type: "button", class: "entity-choice", "aria-pressed": "false", "data-entity": e.id,
        onclick: () => { moveTo(m, e); update(); }}, el("kbd", {}, String(i + 1)), entityName(e)))));
      list.append(el("li", {}, el("button", {type: "button", class: "entity-choice", "aria-pressed": "false",
        onclick: () => { moveTo(m, newEntity(ent.type)); update(); }}, el("kbd", {}, "N"), "New entity")));
      box.append(el("p", {class: "muted"}, "Same entity as:"), list,
        el("div", {class: "editor-actions"},
          el("button", {type: "button", class: "button button-small button-secondary", disabled: ent.canonical === m.id,
            onclick: () => { ent.canonical = m.id; update(); }}, "★ Canonical ", el("kbd", {}, "C")),
          el("button", {type: "button", class: "button button-small button-danger", id: "remove-btn",
            onclick: () => { removeMention(m.id); update(); }}, "Remove ", el("kbd", {}, "Del"))));
    } else if (sel) {
      const text = spanText(sel[0], sel[1]);
      const guess = guessEntity(sel[0], sel[1], null);
      box.append(el("h2", {}, "New mention “" + text + "”"),
        el("p", {class: "muted"}, "Choose its type:"),
        typeButtons(null, (t) => createFromSelection(t)),
        guess ? el("p", {}, el("kbd", {}, "Enter"), " same entity as “" + entityName(guess) + "” (" + guess.type + ")") : "");
    } else {
      box.append(el("h2", {}, "Mark a mention"),
        el("p", {class: "editor-empty"}, "Drag over words, or move with ← → and select with Shift+← →; then choose the type. Click a marked mention to edit it."),
        typeButtons(null, (t) => createFromSelection(t)));
    }
    placeSheet(box, focusTok);
  }

  function countNames(ms) {
    const counts = new Map();
    for (const m of ms) counts.set(spanText(m.t0, m.t1), (counts.get(spanText(m.t0, m.t1)) || 0) + 1);
    return Array.from(counts, ([name, n]) => n > 1 ? name + " ×" + n : name).join(", ");
  }

  function renderEntities() {
    const list = $("entities");
    list.replaceChildren();
    const ents = Array.from(entities.values()).sort((a, b) => mentions.get(a.canonical).t0 - mentions.get(b.canonical).t0);
    $("entity-count").textContent = ents.length ? "(" + ents.length + ", " + mentions.size + " mentions)" : "";
    if (!ents.length) list.append(el("li", {class: "muted"}, "No entities yet."));
    for (const ent of ents) {
      const ms = mentionsOf(ent.id);
      const input = el("input", {type: "text", id: "link-" + ent.id, "data-entity": ent.id,
        placeholder: "Wikipedia title (optional)", "aria-label": "Wikipedia title of " + entityName(ent),
        value: ent.link.replace(/^Wikipedia:/, "").replace(/_/g, " "), disabled: !K.canAnswer});
      input.addEventListener("input", () => { ent.link = normaliseLink(input.value); });
      input.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === "Escape") { e.preventDefault(); $("doc-text").focus(); }
      });
      list.append(el("li", {"data-entity": ent.id},
        el("span", {class: "type-badge t-" + ent.type}, ent.type),
        el("button", {type: "button", class: "ent-name", onclick: () => { active = ent.canonical; cursor = mentions.get(ent.canonical).t0; anchor = null; update(); }},
          "★ " + entityName(ent)),
        el("span", {class: "ent-mentions"}, ms.length + " mention" + (ms.length > 1 ? "s" : "") + ": " +
          countNames(ms)),
        ent.type === "DATE" || ent.type === "TITLE" ? "" : input));
    }
  }

  function renderSuggestions() {
    const list = suggestions();
    $("suggestions-card").hidden = list.length === 0;
    const ul = $("suggestions");
    ul.replaceChildren();
    for (const s of list.slice(0, 8)) {
      const ent = entities.get(s.entity);
      ul.append(el("li", {}, el("span", {}, "“" + spanText(s.t0, s.t1) + "” in sentence " + (toks[s.t0].s + 1) + " → " + entityName(ent)),
        el("button", {type: "button", class: "button button-small button-secondary",
          onclick: () => { acceptSuggestion(s); update(); }}, "Add")));
    }
    if (list.length > 8) ul.append(el("li", {class: "muted"}, "and " + (list.length - 8) + " more"));
  }

  function normaliseLink(value) {
    let v = value.trim();
    const url = v.match(/wikipedia\.org\/wiki\/([^?#]+)/);
    if (url) { try { v = decodeURIComponent(url[1]); } catch (e) { v = url[1]; } }
    v = v.replace(/^Wikipedia:/i, "").trim().replace(/\s+/g, "_");
    return v ? "Wikipedia:" + v.slice(0, 480) : "";
  }

  function update() {
    if (active !== null && !mentions.has(active)) active = null;
    paint();
    renderEditor();
    renderEntities();
    renderSuggestions();
    $("progress").textContent = mentions.size + " mention" + (mentions.size === 1 ? "" : "s") +
      " · " + entities.size + " entit" + (entities.size === 1 ? "y" : "ies");
    K.setReady(mentions.size > 0 || $("no-mentions").checked,
      "Mark the mentions first (or tick “mentions nothing”)");
  }

  function createFromSelection(type) {
    if (!K.canAnswer) return;
    const sel = selection() || (tokMention[cursor] === null ? [cursor, cursor] : null);
    if (!sel) return;
    const m = addMention(sel[0], sel[1], type, null);
    anchor = null;
    if (m) { active = m.id; cursor = m.t1; }
    update();
  }

  // --- Mouse ---------------------------------------------------------------------------------
  const box = () => $("doc-text");
  function tokIndex(target) {
    const t = target.closest && target.closest(".tok");
    return t ? Number(t.getAttribute("data-t")) : null;
  }

  function initMouse() {
    box().addEventListener("mousedown", (e) => {
      if (e.button !== 0) return;
      const i = tokIndex(e.target);
      if (i === null) return;
      e.preventDefault();
      box().focus({preventScroll: true});
      dragging = true;
      clickedMention = tokMention[i];
      active = null;
      anchor = i;
      cursor = i;
      paint();
    });
    box().addEventListener("mouseover", (e) => {
      if (!dragging) return;
      const i = tokIndex(e.target);
      if (i === null || toks[i].s !== toks[anchor].s) return;
      cursor = i;
      if (i !== anchor) clickedMention = null;
      paint();
    });
    document.addEventListener("mouseup", () => {
      if (!dragging) return;
      dragging = false;
      if (clickedMention !== null && cursor === anchor) {
        active = clickedMention;
        anchor = null;
      }
      clickedMention = null;
      update();
    });
  }

  // --- Keyboard ------------------------------------------------------------------------------
  function moveCursor(to, extend) {
    if (to < 0 || to >= toks.length) return;
    if (extend) {
      if (anchor === null) anchor = cursor;
      if (toks[to].s !== toks[anchor].s) return;
      active = null;
    } else {
      anchor = null;
      active = tokMention[to];
    }
    cursor = to;
    tokEls[cursor].scrollIntoView({block: "nearest"});
    update();
  }

  document.addEventListener("keydown", (event) => {
    if (K.isTyping(event)) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    const lower = key.length === 1 ? key.toLowerCase() : key;
    const act = active !== null ? mentions.get(active) : null;
    if (key === "ArrowRight") moveCursor(cursor + 1, event.shiftKey);
    else if (key === "ArrowLeft") moveCursor(cursor - 1, event.shiftKey);
    else if (key === "ArrowDown") moveCursor(sentRange[Math.min(toks[cursor].s + 1, sentRange.length - 1)][0], false);
    else if (key === "ArrowUp") moveCursor(sentRange[Math.max(toks[cursor].s - 1, 0)][0], false);
    else if (key === "Home") moveCursor(sentRange[toks[cursor].s][0], event.shiftKey);
    else if (key === "End") moveCursor(sentRange[toks[cursor].s][1], event.shiftKey);
    else if (TYPE_BY_KEY[lower] && !event.shiftKey) {
      if (act) { setType(act, TYPE_BY_KEY[lower]); update(); } else createFromSelection(TYPE_BY_KEY[lower]);
    } else if (key === "Enter") {
      const t = event.target;
      if (t && (t.tagName === "BUTTON" || t.tagName === "A")) return;
      const sel = selection();
      if (sel) {
        const guess = guessEntity(sel[0], sel[1], null);
        if (guess) createFromSelection(guess.type);
        else K.setStatus("Choose a type: P, O, G, D or T.", "error");
      }
    } else if (/^[1-9]$/.test(key) && act) {
      const e = sameTypeEntities(entities.get(act.entity).type, act.entity)[Number(key) - 1];
      if (e) { moveTo(act, e); update(); }
    } else if (lower === "n" && act) { moveTo(act, newEntity(entities.get(act.entity).type)); update(); }
    else if (lower === "c" && act) { entities.get(act.entity).canonical = act.id; update(); }
    else if ((key === "Delete" || key === "Backspace" || lower === "x") && act) { removeMention(act.id); update(); }
    else if (lower === "a") acceptAll();
    else if (lower === "w") {
      const entId = act ? act.entity : null;
      const input = entId !== null ? $("link-" + entId) : document.querySelector(".entity-list input");
      if (input) input.focus(); else return;
    } else if (key === "Escape") { anchor = null; active = null; update(); }
    else return;
    event.preventDefault();
  });

  $("no-mentions").addEventListener("change", update);

  K.onPayload(() => {
    const out = [];
    for (const m of Array.from(mentions.values()).sort((a, b) => a.t0 - b.t0)) {
      const ent = entities.get(m.entity);
      out.push({begin: toks[m.t0].b, end: toks[m.t1].e, type: ent.type, entity: "E" + ent.id,
        canonical: ent.canonical === m.id, link: ent.link});
    }
    return [{question: K.data.question, choices: ["done"], extra: {mentions: out},
      seconds: Math.round(K.elapsed() * 10) / 10}];
  });

  buildText();
  initMouse();
  update();
  $("doc-text").focus({preventScroll: true});
})();
