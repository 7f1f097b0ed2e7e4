// Event wording shared with the CLI: /events.json (app/web/events.json) is read here and by
// app/client/wording.py, so the event log and `bannerfall demo`/`replay` say the same thing. The
// template language is described in the file's `_doc`; keep this interpreter and the Python one
// in step (tests/test_wording.py runs both on the same recorded events). No DOM: runs under node.

const SUITS = { c: "♣", d: "♦", h: "♥", s: "♠" };
const SYMBOLS = { infantry: "⚔", archer: "➹", knight: "♞" };
const TAG = /\{([^{}]*)\}/g;

let loaded = null;

/** Fetch /events.json once (the page awaits it before showing a match). */
export function loadWording(url = "/events.json") {
  if (!loaded) loaded = fetch(url).then((r) => r.json()).then((data) => { wordingData = data; return data; });
  return loaded;
}

let wordingData = null;

/** Use already-parsed wording (tests, or a page that has it inline). */
export function setWording(data) {
  wordingData = data;
  loaded = Promise.resolve(data);
}

class Entry {
  constructor(key, value) { this.key = key; this.value = value; }
}

function parse(template) {
  const root = [];
  const stack = [root];
  let pos = 0;
  for (const m of template.matchAll(TAG)) {
    if (m.index > pos) stack[stack.length - 1].push(template.slice(pos, m.index));
    pos = m.index + m[0].length;
    const tag = m[1];
    if (tag === "/") {
      if (stack.length > 1) stack.pop();
      continue;
    }
    let node;
    if (tag[0] === "?" || tag[0] === "!") {
      const eq = tag.indexOf("=");
      node = { t: "if", negate: tag[0] === "!", expr: eq < 0 ? tag.slice(1) : tag.slice(1, eq), literal: eq < 0 ? null : tag.slice(eq + 1), body: [] };
    } else if (tag[0] === "#") {
      const bar = tag.indexOf("|");
      node = { t: "each", expr: bar < 0 ? tag.slice(1) : tag.slice(1, bar), sep: bar < 0 ? ", " : tag.slice(bar + 1), body: [] };
    } else {
      stack[stack.length - 1].push({ t: "val", expr: tag });
      continue;
    }
    stack[stack.length - 1].push(node);
    stack.push(node.body);
  }
  if (pos < template.length) stack[stack.length - 1].push(template.slice(pos));
  return root;
}

const parsed = new Map();

const isObject = (x) => x !== null && typeof x === "object" && !Array.isArray(x) && !(x instanceof Entry);

function lookup(scopes, path) {
  if (path === ".") {
    const last = scopes[scopes.length - 1];
    return last instanceof Entry ? last.value : last;
  }
  if (path === "@key") {
    for (let i = scopes.length - 1; i >= 0; i--) if (scopes[i] instanceof Entry) return scopes[i].key;
    return null;
  }
  const parts = path.split(".");
  let value = null;
  for (let i = scopes.length - 1; i >= 0; i--) {
    const scope = scopes[i] instanceof Entry ? scopes[i].value : scopes[i];
    if (isObject(scope) && Object.prototype.hasOwnProperty.call(scope, parts[0])) {
      value = scope[parts[0]];
      break;
    }
  }
  for (const part of parts.slice(1)) {
    if (isObject(value)) value = value[part] ?? null;
    else if (Array.isArray(value) && /^\d+$/.test(part) && Number(part) < value.length) value = value[Number(part)];
    else return null;
  }
  return value === undefined ? null : value;
}

function key(value) {
  if (value === null || value === undefined) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  return String(value);
}

function text(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toFixed(1);
  if (Array.isArray(value)) return value.map(text).join(", ");
  if (isObject(value)) return Object.entries(value).map(([k, v]) => `${k} ${text(v)}`).join(", ");
  return String(value);
}

class Renderer {
  constructor(game, nameOf) {
    this.spec = (wordingData && wordingData[game]) || {};
    this.nameOf = nameOf;
  }

  name(seat) {
    if (seat === null || seat === undefined) return "nobody";
    if (seat === "neutral") return "neutral";
    return typeof seat === "number" || /^\d+$/.test(String(seat)) ? this.nameOf(Number(seat)) : String(seat);
  }

  card(card) {
    const template = this.spec.card;
    if (template === undefined || card === null || card === undefined) return card === null || card === undefined ? "??" : text(card);
    return this.render(template, [card]);
  }

  filter(value, name) {
    switch (name) {
      case "name": return this.name(value);
      case "names": return (value || []).map((v) => this.name(v)).join(" & ") || "nobody";
      case "cap": { const t = text(value); return t.slice(0, 1).toUpperCase() + t.slice(1); }
      case "words": return text(value).replace(/_/g, " ");
      case "count": return Array.isArray(value) ? value.length : isObject(value) ? Object.keys(value).length : 0;
      case "s": return key(value) === "1" ? "" : "s";
      case "join": return (value || []).map(text).join(" ");
      case "list": return (value || []).map(text).join(", ");
      case "land": return `L${text(value)}`;
      case "lands": return (value || []).map((v) => `L${text(v)}`).join(", ");
      case "poker": return value ? (value[0] === "T" ? "10" : value[0]) + (SUITS[value.slice(1, 2)] || "") : "??";
      case "symbols": return Object.entries(value || {}).filter(([, n]) => n).map(([k, n]) => (SYMBOLS[k] || k).repeat(n)).join("");
      case "card": return this.card(value);
      case "cards": return (value || []).map((c) => this.card(c)).join(this.spec.card_sep ?? ", ") || "—";
      case "reason": return (this.spec.reasons || {})[value] || text(value).replace(/_/g, " ");
      case "score": return this.spec.score ? this.render(this.spec.score, [value]) : text(value);
      default: throw new Error(`unknown filter ${name} in events.json`);
    }
  }

  expr(scopes, expr) {
    const [path, ...filters] = expr.split("|");
    let value = lookup(scopes, path.trim());
    for (const f of filters) value = this.filter(value, f.trim());
    return value;
  }

  render(template, scopes) {
    if (template === null || template === undefined) return "";
    if (typeof template === "object") {
      const value = this.expr(scopes, template.by);
      const cases = template.cases || {};
      const k = key(value);
      return this.render(Object.prototype.hasOwnProperty.call(cases, k) ? cases[k] : (template.default ?? ""), scopes);
    }
    if (!parsed.has(template)) parsed.set(template, parse(template));
    return this.nodes(parsed.get(template), scopes);
  }

  nodes(nodes, scopes) {
    let out = "";
    for (const node of nodes) {
      if (typeof node === "string") out += node;
      else if (node.t === "val") out += text(this.expr(scopes, node.expr));
      else if (node.t === "if") {
        const value = this.expr(scopes, node.expr);
        const truth = node.literal === null
          ? !(value === null || value === undefined || value === false || value === "" || value === 0 ||
              (Array.isArray(value) && !value.length) || (isObject(value) && !Object.keys(value).length))
          : key(value) === node.literal;
        if (truth !== node.negate) out += this.nodes(node.body, scopes);
      } else {
        const value = this.expr(scopes, node.expr);
        const pairs = isObject(value) ? Object.entries(value) : (value || []).map((v, i) => [i, v]);
        out += pairs.map(([k, v]) => this.nodes(node.body, [...scopes, new Entry(String(k), v)])).join(node.sep);
      }
    }
    return out;
  }
}

/** One event as {text, kind, seat, private, known}, or null when it is not shown. ``name``: seat -> name.
 *  ``known`` is false when events.json has no entry for the type (the text is then the type in words). */
export function describeEvent(game, ev, name) {
  if (!wordingData) return { text: String(ev.type).replace(/_/g, " "), kind: "minor", seat: ev.seat ?? null, private: false, known: false };
  const spec = (wordingData[game] || {}).events || {};
  const known = Object.prototype.hasOwnProperty.call(spec, ev.type);
  const entry = known ? spec[ev.type] : wordingData.default;
  if (entry === null) return null;
  const r = new Renderer(game, name);
  const seatPath = entry.seat === undefined ? "seat" : entry.seat;
  const seat = seatPath ? lookup([ev], seatPath) : null;
  return { text: r.render(entry.text, [ev]), kind: entry.kind || "normal", seat: typeof seat === "number" ? seat : null, private: !!entry.private, known };
}

/** A final score in the game's unit ("18 provinces"). */
export function scoreText(game, score) {
  return new Renderer(game, String).filter(score, "score");
}

/** Why a match ended, in words. */
export function reasonText(game, reason) {
  return reason ? new Renderer(game, String).filter(reason, "reason") : "";
}
