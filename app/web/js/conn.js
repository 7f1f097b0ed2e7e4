// The match socket (docs/protocol.md, "The match socket") with automatic reconnect and resume.
//
// - On open it sends `hello` (with `since_version` after a drop, so missed events arrive).
// - `act(action)` sends `{type: "act", seq, action, version}` and resolves on the matching `ack`,
//   rejects with {code, message} on the matching `error`. Unanswered acts are re-sent with the same
//   `seq` after a reconnect: the server never applies a seq twice, it repeats the ack.
// - A silent socket (no pong within a few seconds) is treated as dropped.
// - Close codes 4001 (replaced by another tab), 4401/4403/4404 stop the reconnect loop.
// - Deltas (docs/protocol.md, "Deltas, audiences and versions"): `hello` says `deltas: true` (the
//   `deltas` option). The connection holds the document {status, prompts, view} of the last full
//   `state` and its version. A `delta` whose `base` is that version is applied (applyPatch,
//   ./patch.js) and `onMessage` gets a synthesized full `state` (the last state's match_id, game,
//   seat, viewer; the delta's version and events; `via_delta: true`), so the page only ever sees
//   states. A `base` that is not the held version, or a patch that does not apply: send
//   `{type: "resume", since_version: <held>}` and drop deltas until the next full `state`. A full
//   `state` always resets the document (today's server sends only those).

import { applyPatch } from "./patch.js";

export { applyPatch, PatchError } from "./patch.js";

const FATAL = { 4401: "unauthorized", 4403: "forbidden", 4404: "no such match" };
const SEQ_KEY = "bannerfall.seq";

/** Client sequence numbers must never repeat for a seat, even across page reloads. */
function nextSeq() {
  const last = Number(localStorage.getItem(SEQ_KEY) || 0);
  const seq = Math.max(last + 1, Date.now() * 1000);
  localStorage.setItem(SEQ_KEY, String(seq));
  return seq;
}

export class MatchConnection {
  /**
   * @param {object} o
   * @param {string} o.matchId
   * @param {string} o.token
   * @param {string} [o.as]          "spectator" | "admin"
   * @param {boolean} [o.deltas]     false: ask the server for a full state per change (default true)
   * @param {(msg: object) => void} o.onMessage   every server message (state, ended, error, …);
   *        a delta arrives as the full state it makes
   * @param {(status: string, detail?: string) => void} o.onStatus
   *        "connecting" | "connected" | "reconnecting" | "offline" | "replaced" | "closed" | "failed"
   */
  constructor({ matchId, token, as, deltas = true, onMessage, onStatus }) {
    this.matchId = matchId;
    this.token = token;
    this.as = as;
    this.deltas = deltas;
    this.doc = null; // {status, prompts, view} at this.version; null until a full state
    this.head = null; // match_id, game, seat, viewer of the last full state
    this.resyncing = false; // a resume was sent: deltas are dropped until the next full state
    this.resumes = 0; // resumes sent because of a gap or a bad patch
    this.onMessage = onMessage;
    this.onStatus = onStatus || (() => {});
    this.ws = null;
    this.version = null; // newest state version received
    this.pending = new Map(); // seq -> {message, resolve, reject}
    this.stopped = false;
    this.attempt = 0;
    this.ended = false;
    this.reconnects = 0;
    this.timer = null;
    this.heartbeat = null;
    this.lastHeard = 0;
    this._online = () => this._reconnectSoon(0);
    this._offline = () => {
      this.onStatus("offline", "no network");
      if (this.ws) this.ws.close(4000, "offline");
    };
    window.addEventListener("online", this._online);
    window.addEventListener("offline", this._offline);
  }

  start() {
    this._open();
    return this;
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.heartbeat);
    window.removeEventListener("online", this._online);
    window.removeEventListener("offline", this._offline);
    if (this.ws) this.ws.close(1000, "leaving");
    for (const p of this.pending.values()) p.reject({ code: "closed", message: "the page left the match" });
    this.pending.clear();
  }

  /** Drop the socket as a network failure would (used by tests and the "reconnect" button). */
  drop() {
    if (this.ws) this.ws.close(4000, "dropped by the client");
  }

  get connected() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN && this.version !== null && this._hello;
  }

  /** Send an action; resolves with the ack's version, rejects with the server's {code, message}. */
  act(action) {
    const seq = nextSeq();
    const message = { type: "act", seq, action };
    if (this.version !== null) message.version = this.version;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { message, resolve, reject });
      if (this.connected) this._send(message);
    });
  }

  _url() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    return `${proto}//${location.host}/ws/matches/${encodeURIComponent(this.matchId)}`;
  }

  _open() {
    if (this.stopped) return;
    this._hello = false;
    this.doc = null; // a new socket starts with a full state
    this.resyncing = false;
    this.onStatus(this.attempt ? "reconnecting" : "connecting");
    let ws;
    try {
      ws = new WebSocket(this._url());
    } catch {
      this._reconnectSoon();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      const hello = { type: "hello", token: this.token, deltas: this.deltas };
      if (this.as) hello.as = this.as;
      // first connect: since 0, so the log shows what happened before the page opened
      hello.since_version = this.version ?? 0;
      ws.send(JSON.stringify(hello));
      this.lastHeard = Date.now();
      clearInterval(this.heartbeat);
      this.heartbeat = setInterval(() => this._beat(ws), 5000);
    };
    ws.onmessage = (ev) => {
      if (ws !== this.ws) return;
      this.lastHeard = Date.now();
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        return;
      }
      this._handle(msg);
    };
    ws.onclose = (ev) => {
      if (ws !== this.ws) return;
      clearInterval(this.heartbeat);
      this.ws = null;
      this._hello = false;
      if (this.stopped) return;
      if (ev.code === 4001) {
        this.onStatus("replaced", "this match was opened in another tab or window");
        return;
      }
      if (FATAL[ev.code]) {
        this.onStatus("failed", FATAL[ev.code]);
        return;
      }
      if (this.ended) {
        this.onStatus("closed", "the match is over");
        return;
      }
      this._reconnectSoon();
    };
  }

  _beat(ws) {
    if (ws !== this.ws || ws.readyState !== WebSocket.OPEN) return;
    if (Date.now() - this.lastHeard > 12000) {
      ws.close(4000, "no answer from the server"); // onclose reconnects
      return;
    }
    ws.send(JSON.stringify({ type: "ping", t: Date.now() }));
  }

  _reconnectSoon(delay) {
    if (this.stopped || this.ws) return;
    clearTimeout(this.timer);
    this.attempt += 1;
    const wait = delay ?? Math.min(5000, 250 * 2 ** Math.min(this.attempt, 5));
    this.onStatus(navigator.onLine === false ? "offline" : "reconnecting", `retry in ${Math.ceil(wait / 1000)} s`);
    this.timer = setTimeout(() => {
      this.timer = null;
      this._open();
    }, wait);
  }

  _send(message) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  /** The full state a delta makes, or null when it is dropped (after asking for a full state). */
  _applyDelta(msg) {
    if (this.doc === null || this.resyncing) return null;
    const { base, version, patch } = msg;
    if (base !== this.version || !Number.isInteger(version) || version <= base) {
      this._resync();
      return null;
    }
    let doc;
    try {
      doc = applyPatch(this.doc, patch, { inPlace: true });
    } catch {
      doc = null; // this.doc may be half patched: the next full state resets it
    }
    if (doc === null || typeof doc !== "object" || !("status" in doc && "prompts" in doc && "view" in doc)) {
      this._resync();
      return null;
    }
    this.doc = doc;
    // the page gets its own copy: what it changes never reaches the held document
    const mine = JSON.parse(JSON.stringify(doc));
    return {
      type: "state", ...this.head, version, status: mine.status, prompts: mine.prompts, view: mine.view,
      events: Array.isArray(msg.events) ? msg.events : [], via_delta: true,
    };
  }

  _resync() {
    this.resyncing = true;
    this.resumes += 1;
    if (this.version !== null) this._send({ type: "resume", since_version: this.version });
  }

  _handle(msg) {
    if (msg.type === "delta") {
      const state = this._applyDelta(msg);
      if (state === null) return;
      this.version = state.version;
      this.onMessage(state);
      return;
    }
    switch (msg.type) {
      case "state": {
        const first = !this._hello;
        this.version = msg.version;
        const { match_id, game, seat, viewer, status, prompts, view } = msg;
        this.head = { match_id, game, seat, viewer };
        this.doc = JSON.parse(JSON.stringify({ status, prompts, view }));
        this.resyncing = false;
        if (first) {
          this._hello = true;
          if (this.attempt) this.reconnects += 1;
          this.attempt = 0;
          this.onStatus("connected");
          // acts sent before a drop (or queued while it was down) go out again with the same seq
          for (const p of this.pending.values()) {
            if (p.message.version === undefined || p.message.version < 0) p.message.version = msg.version;
            this._send(p.message);
          }
        }
        break;
      }
      case "ack": {
        const p = this.pending.get(msg.seq);
        if (p) {
          this.pending.delete(msg.seq);
          p.resolve(msg.version);
        }
        return; // not for the page
      }
      case "error": {
        const p = msg.seq !== undefined ? this.pending.get(msg.seq) : null;
        if (p) {
          this.pending.delete(msg.seq);
          p.reject({ code: msg.code, message: msg.message });
          return;
        }
        break;
      }
      case "ended":
        this.ended = true;
        break;
      case "pong":
        return;
      default:
        break;
    }
    this.onMessage(msg);
  }
}
