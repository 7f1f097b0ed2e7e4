// Small DOM helpers shared by the play client and the admin console; the server clock is the SDK's.
import { serverClock } from "./sdk/bannerfall-client.js";

const SVG_NS = "http://www.w3.org/2000/svg";

/** h("div.card#id", {attrs, on: {click}}, ...children) -> HTMLElement. */
export function h(tag, attrs, ...children) {
  return build(document.createElement(parseTag(tag).name), tag, attrs, children);
}

/** Like h() but in the SVG namespace. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, parseTag(tag).name), tag, attrs, children);
}

function parseTag(tag) {
  const m = /^([a-zA-Z0-9]+)?((?:[.#][\w-]+)*)$/.exec(tag);
  const parts = m && m[2] ? m[2].match(/[.#][\w-]+/g) : [];
  return { name: (m && m[1]) || "div", parts };
}

function build(node, tag, attrs, children) {
  for (const part of parseTag(tag).parts) {
    if (part[0] === ".") node.classList.add(part.slice(1));
    else node.id = part.slice(1);
  }
  if (attrs && (typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "on") {
      for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn);
    } else if (key === "class") {
      for (const c of String(value).split(/\s+/).filter(Boolean)) node.classList.add(c);
    } else if (key === "dataset") {
      Object.assign(node.dataset, value);
    } else if (key === "style" && typeof value === "object") {
      Object.assign(node.style, value);
    } else if (key in node && !(node instanceof SVGElement) && key !== "list") {
      node[key] = value;
    } else {
      node.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace all children of ``node``. */
export function replace(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

/** Seat colours (colour-blind friendly-ish, distinct on a dark background). */
export const SEAT_COLOURS = ["#e4574c", "#3d8fe0", "#43b05c", "#2bbbb0", "#a66bd8", "#ee8a2f"];

export function seatColour(seat) {
  return seat === null || seat === undefined || seat < 0 ? "#7a8494" : SEAT_COLOURS[seat % SEAT_COLOURS.length];
}

export const SUIT_SYMBOL = { clubs: "♣", diamonds: "♦", hearts: "♥", spades: "♠" };
export function isRedSuit(suit) {
  return suit === "hearts" || suit === "diamonds";
}

/** Whole seconds left until ``deadlineAt`` (epoch seconds, server clock: the SDK's, corrected by the
 *  server's ``server_time``). */
export function secondsLeft(deadlineAt) {
  const left = serverClock.secondsLeft(deadlineAt);
  return left === null ? null : Math.ceil(left);
}

/** The server's time now (epoch seconds). */
export function serverNow() { return serverClock.now(); }

export function fmtTime(epoch) {
  if (!epoch) return "—";
  const d = new Date(epoch * 1000);
  return d.toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" });
}

export function shortId(id) {
  return id ? String(id).slice(0, 8) : "";
}

/** Turn "most_unevenly" into "most unevenly". */
export function words(text) {
  return String(text ?? "").replace(/_/g, " ");
}

export function ordinal(n) {
  const v = n % 100;
  const suffix = v >= 11 && v <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" }[n % 10] || "th");
  return `${n}${suffix}`;
}

/** A small toast in the corner; kind: "error" | "info". */
export function toast(message, kind = "info", ms = 5000) {
  let box = document.getElementById("toasts");
  if (!box) {
    box = h("div#toasts", { role: "status", "aria-live": "polite" });
    document.body.append(box);
  }
  const item = h(`div.toast.toast-${kind}`, message);
  box.append(item);
  setTimeout(() => item.remove(), ms);
  return item;
}
