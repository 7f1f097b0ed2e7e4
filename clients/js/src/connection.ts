// The match socket (docs/protocol.md, "The match socket", "A client that applies deltas", "Rules a
// client can rely on", "Close codes and bounded times"):
//
// - `hello` on every new socket (`since_version` = the held version after a drop, so the missed
//   events come), `deltas: true` by default, `protocol: 1` where the server knows the field.
// - A document {status, prompts, view} and its version are held, from every full `state`; a `delta`
//   whose `base` is the held version is applied (fast-json-patch) and handed on as the full state it
//   makes (`via_delta: true`). A gap (another `base`) or a patch that does not apply: one `resume`
//   with the held version, every `delta` dropped until the next full `state`.
// - `act()` sends `{type: "act", seq, action, version}` with a fresh `seq` and resolves on its `ack`
//   (rejects on its `error`). Acts not yet answered when a socket goes are sent again, with their same
//   `seq`, once the next socket has its first `state`: the server never applies a `seq` twice.
// - Closes are answered by the documented rules: 4001 (replaced) and the "fix the request" codes
//   stop; 1011, 1012, 1013, 4008, 4429, 4503 and a dropped connection (1006) reconnect with backoff
//   (1013 and 4429 after the error's `retry_after`).
// - Events are handed on once: an event whose `v` is not above the last one handed on is dropped.
// - `server_time` of `state` and `pong` corrects the clock deadlines are counted with.
import { ActError } from "./errors.js";
import { applyPatch } from "./patch.js";
import { ServerClock, serverClock } from "./clock.js";
import type {
  AckMessage, EndedMessage, ErrorMessage, Event, PromptInfo, StateMessage, DeltaMessage, PongMessage,
} from "./generated/messages.js";

/** The protocol version this SDK speaks (`hello.protocol`). */
export const PROTOCOL = 1;

/** What a connection needs of a WebSocket: the browser's, or the `ws` package's in node. */
export interface WebSocketLike {
  readonly readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  terminate?: () => void;
}
export type WebSocketFactory = new (url: string) => WebSocketLike;

let defaultWebSocket: WebSocketFactory | null = null;

/** Set the WebSocket class connections use when not given one (the node entry sets `ws`'s). */
export function setDefaultWebSocket(ctor: WebSocketFactory | null): void {
  defaultWebSocket = ctor;
}

function findWebSocket(): WebSocketFactory {
  if (defaultWebSocket) return defaultWebSocket;
  const global = (globalThis as { WebSocket?: WebSocketFactory }).WebSocket;
  if (global) return global;
  throw new Error("no WebSocket: pass one (`WebSocket` option) or import the package's node entry");
}

const OPEN = 1;

/** Socket URLs whose server refused `hello.protocol` as an unknown field (servers before it): later
 *  connections to them say hello without it at once. */
const noProtocolField = new Set<string>();

/** A full state as the connection hands it on: a server `state`, or the one a `delta` made. */
export interface MatchState<View = Record<string, unknown>, Ev = object>
  extends Omit<StateMessage, "view" | "events" | "server_time"> {
  view: View;
  /** The events this state brings that were not handed on before (deduplicated by `v`). */
  events: Array<Ev & { v: number; type: string }>;
  /** The server's clock when it sent the state (epoch seconds), where the server says it. */
  server_time?: number;
  /** True when the state was made here from a `delta`. */
  via_delta?: boolean;
}

export type ConnectionStatus =
  | "connecting" // the first socket is opening
  | "open" // a socket has its first state: acts go out
  | "reconnecting" // the socket went; another opens after a backoff
  | "replaced" // 4001: a newer socket for the same seat plays (no reconnect)
  | "failed" // a close that reconnecting would not cure (4401, 4403, 4404, …)
  | "closed"; // closed by close(), by the server (1000/1001), or after the match ended

export interface ConnectionOptions {
  /** `http(s)://host[:port]` of the server (the socket is `ws(s)://…/ws/matches/{id}`); in a page,
   *  "" or left out: the page's own host. */
  baseUrl?: string;
  matchId: string;
  token: string;
  /** Watch as `"spectator"`, or `"admin"` (admins only); default: your seat, or a spectator. */
  as?: "spectator" | "admin";
  /** false: a full state per change instead of deltas. */
  deltas?: boolean;
  /** The first socket's `since_version` (default 0: every event from the start, within the
   *  server's window); null to ask for none. */
  sinceVersion?: number | null;
  /** The protocol version sent in `hello` (default {@link PROTOCOL}); null: leave it out. A server
   *  that does not know the field is asked again without it. */
  protocol?: number | null;
  WebSocket?: WebSocketFactory;
  clock?: ServerClock;
  /** Reconnect backoff: `min(maxDelayMs, initialDelayMs × 2^attempt)`, with jitter (× 0.5–1). */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number; maxAttempts?: number };
  /** An application `ping` this often (default 5000 ms): the round trip samples the clock, and a
   *  socket silent for `silenceMs` (default 15000) is treated as dropped. 0: no pings. */
  heartbeatMs?: number;
  silenceMs?: number;
  /** Makes each act's `seq` (default: increasing, from the clock in microseconds, never repeated
   *  in this process: a seq must be fresh for the seat, also across reloads). */
  nextSeq?: () => number;
  /** Start at once (default true); else call {@link MatchConnection.start}. */
  autoStart?: boolean;
}

type Listener<T> = (value: T) => void;
interface EventMap {
  state: MatchState;
  events: MatchState["events"];
  ack: AckMessage;
  error: ErrorMessage;
  ended: EndedMessage;
  status: { status: ConnectionStatus; detail?: string };
  close: { code: number; reason: string };
  message: Record<string, unknown>;
}

let lastSeq = 0;
/** A fresh seq: the clock in microseconds, above the last one made here. */
export function defaultSeq(): number {
  lastSeq = Math.max(lastSeq + 1, Date.now() * 1000);
  return lastSeq;
}

interface Pending {
  message: { type: "act"; seq: number; action: Record<string, unknown>; version?: number };
  resolve: (ack: AckMessage) => void;
  reject: (err: ActError) => void;
  timer?: ReturnType<typeof setTimeout>;
}

/** Close codes after which reconnecting cannot help (docs/protocol.md, "Close codes"). */
const FATAL: Record<number, string> = {
  1007: "a frame that is not UTF-8",
  1009: "a message over 1 MiB",
  4400: "invalid text in hello or the socket path",
  4401: "unauthorized (hello refused or unknown token)",
  4403: "forbidden",
  4404: "no such match",
  4408: "no hello in time",
  4426: "unsupported protocol",
};

/** The match socket with delta application, gap detection, resume, reconnection and resends. */
export class MatchConnection<View = Record<string, unknown>, Ev = object,
  Action extends { type: string } = { type: string; [k: string]: unknown }> {
  readonly matchId: string;
  readonly clock: ServerClock;
  /** The connection's status (see {@link ConnectionStatus}). */
  status: ConnectionStatus = "connecting";
  /** The last full state (made from a delta or not); null before the first. */
  state: MatchState<View, Ev> | null = null;
  /** The `ended` message, once the match ended. */
  endedMessage: EndedMessage | null = null;
  /** How many sockets were opened after the first, and how many resumes a gap caused. */
  reconnects = 0;
  resumes = 0;

  private readonly opts: Required<Pick<ConnectionOptions, "token" | "deltas">> & ConnectionOptions;
  private readonly WS: WebSocketFactory;
  private ws: WebSocketLike | null = null;
  private doc: { status: unknown; prompts: unknown; view: unknown } | null = null;
  private head: Pick<StateMessage, "match_id" | "game" | "seat" | "viewer"> | null = null;
  private held: number | null = null;
  private resyncing = false;
  private hadState = false; // the current socket has had its first state
  private lastEventV = -1;
  private pending = new Map<number, Pending>();
  private listeners = new Map<keyof EventMap, Set<Listener<never>>>();
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private heartbeat: ReturnType<typeof setInterval> | null = null;
  private lastHeard = 0;
  private stopped = false;
  private sendProtocol: boolean;
  private lastError: ErrorMessage | null = null;
  private endedResolve!: (m: EndedMessage) => void;
  private closedResolve!: (s: { status: ConnectionStatus; code: number; reason: string }) => void;
  private online = () => this.reconnectSoon(0);
  /** Resolves with the `ended` message when the match ends. */
  readonly ended: Promise<EndedMessage>;
  /** Resolves when the connection stopped for good (replaced, failed or closed). */
  readonly closed: Promise<{ status: ConnectionStatus; code: number; reason: string }>;

  constructor(options: ConnectionOptions) {
    this.opts = { deltas: true, ...options };
    this.matchId = options.matchId;
    this.clock = options.clock ?? serverClock;
    this.WS = options.WebSocket ?? findWebSocket();
    this.sendProtocol = options.protocol !== null && !noProtocolField.has(this.url());
    this.ended = new Promise((resolve) => { this.endedResolve = resolve; });
    this.closed = new Promise((resolve) => { this.closedResolve = resolve; });
    if (options.autoStart !== false) this.start();
  }

  /** Listen to `state`, `events`, `ack`, `error`, `ended`, `status`, `close` or `message` (every
   *  server message as it came). Returns the function that stops listening. */
  on<K extends keyof EventMap>(type: K, fn: Listener<K extends "state" ? MatchState<View, Ev>
    : K extends "events" ? MatchState<View, Ev>["events"] : EventMap[K]>): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(fn as Listener<never>);
    return () => set!.delete(fn as Listener<never>);
  }

  private emit<K extends keyof EventMap>(type: K, value: EventMap[K]): void {
    for (const fn of this.listeners.get(type) ?? []) {
      try {
        (fn as Listener<EventMap[K]>)(value);
      } catch (err) {
        queueMicrotask(() => { throw err; }); // a listener's bug is its own, not the connection's
      }
    }
  }

  /** The held audience version (of {@link state}); null before the first state. */
  get version(): number | null {
    return this.held;
  }

  /** Your seat (null for a spectator or an admin), once the first state came. */
  get seat(): number | null {
    return this.state?.seat ?? null;
  }

  /** The prompt that asks your seat for an answer now (none, or one already submitted: null). */
  get myPrompt(): PromptInfo | null {
    const s = this.state;
    if (!s || s.seat === null || s.status !== "running") return null;
    return s.prompts.find((p) => p.seat === s.seat && !p.submitted) ?? null;
  }

  /** Seconds left on a prompt's deadline (default: yours), by the server's clock; null for none. */
  secondsLeft(prompt: PromptInfo | null = this.myPrompt): number | null {
    return prompt ? this.clock.secondsLeft(prompt.deadline_at) : null;
  }

  /** Open the first socket (done by the constructor unless `autoStart: false`). */
  start(): this {
    if (!this.ws && !this.stopped && this.timer === null) this.open();
    const g = globalThis as { addEventListener?: (t: string, f: () => void) => void };
    if (typeof g.addEventListener === "function") g.addEventListener("online", this.online);
    return this;
  }

  /** Close for good (1000); unanswered acts are rejected with `closed`. */
  close(): void {
    this.finish("closed", 1000, "closed by the client");
  }

  /** Drop the socket as a network failure would (the connection reconnects and resumes). */
  drop(): void {
    const ws = this.ws;
    if (!ws) return;
    if (typeof ws.terminate === "function") ws.terminate();
    else ws.close(4000, "dropped by the client");
  }

  /** Open a new socket now, e.g. after "replaced" to play here again (the other one gets 4001).
   *  ({@link closed} stays resolved from the first stop.) */
  reconnect(): void {
    if (this.ws) return;
    this.stopped = false;
    this.attempt = 0;
    this.clearTimer();
    this.open();
  }

  /**
   * Send an action for your seat; resolves with its `ack` (the action is durable; `ack.version` is
   * the version it made, which you hold already), rejects with an {@link ActError} carrying the
   * server's code. `version`: the state version you decided on (default: the held one). Sent now
   * if a socket is open, else once the next one has its first state; resent with the same `seq`
   * after a reconnect until answered.
   */
  act(action: Action, { version }: { version?: number | null } = {}): Promise<AckMessage> {
    const seq = (this.opts.nextSeq ?? defaultSeq)();
    const message: Pending["message"] = { type: "act", seq, action: action as Record<string, unknown> };
    const v = version === undefined ? this.held : version;
    if (v !== null && v !== undefined) message.version = v;
    return new Promise((resolve, reject) => {
      if (this.stopped) {
        reject(new ActError("closed", "the connection is closed", seq));
        return;
      }
      this.pending.set(seq, { message, resolve, reject });
      if (this.ws && this.hadState) this.send(message);
    });
  }

  /** Resolves with the first state (from now on, or the current one) for which `test` is true;
   *  rejects after `timeoutMs` (default: never) or when the connection stops for good. */
  waitFor(test: (s: MatchState<View, Ev>) => boolean, { timeoutMs }: { timeoutMs?: number } = {}): Promise<MatchState<View, Ev>> {
    if (this.state && test(this.state)) return Promise.resolve(this.state);
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = () => { off(); if (timer) clearTimeout(timer); };
      const off = this.on("state", (s) => {
        if (test(s)) { done(); resolve(s); }
      });
      if (timeoutMs !== undefined) timer = setTimeout(() => { done(); reject(new Error("waitFor: timed out")); }, timeoutMs);
      void this.closed.then(({ status }) => { done(); reject(new Error(`the connection is ${status}`)); });
    });
  }

  /**
   * Play your seat until the match ends: whenever the held state has a prompt for your seat not yet
   * answered, `decide(state, prompt)` gives the action to send (null: send nothing now). It is
   * asked again only on a newer state, after the last act was answered: on an `error` (the rules
   * refused it) with the same state plus the error (`decide(state, prompt, error)`), at most
   * `maxErrors` times in a row. Resolves with the `ended` message.
   */
  play(decide: (state: MatchState<View, Ev>, prompt: PromptInfo, error?: ActError) => Action | null,
    { maxErrors = 20 }: { maxErrors?: number } = {}): Promise<EndedMessage> {
    let busy = false;
    let errors = 0;
    let lastError: ActError | undefined;
    const step = () => {
      const s = this.state;
      const prompt = this.myPrompt;
      if (busy || !s || !prompt || this.endedMessage || errors >= maxErrors) return;
      const action = decide(s, prompt, lastError);
      if (!action) return;
      busy = true;
      this.act(action, { version: s.version }).then(() => {
        errors = 0;
        lastError = undefined;
      }, (err: ActError) => {
        errors += 1;
        lastError = err;
      }).finally(() => {
        busy = false;
        step(); // the state of the ack's version is held already; after an error, decide knowing why
      });
    };
    const off = this.on("state", () => { errors = 0; step(); });
    step();
    return this.ended.finally(off);
  }

  // -- sockets ------------------------------------------------------------------------------------

  private url(): string {
    let base = this.opts.baseUrl ?? "";
    if (!base) {
      const loc = (globalThis as { location?: { protocol: string; host: string } }).location;
      if (!loc) throw new Error("baseUrl is needed outside a page");
      base = `${loc.protocol}//${loc.host}`;
    }
    base = base.replace(/\/+$/, "").replace(/^http(s?):\/\//, "ws$1://");
    return `${base}/ws/matches/${encodeURIComponent(this.matchId)}`;
  }

  private setStatus(status: ConnectionStatus, detail?: string): void {
    this.status = status;
    this.emit("status", { status, detail });
  }

  private open(): void {
    if (this.stopped) return;
    this.hadState = false;
    this.doc = null; // a new socket starts with a full state
    this.resyncing = false;
    this.lastError = null;
    this.setStatus(this.attempt || this.reconnects || this.held !== null ? "reconnecting" : "connecting");
    let ws: WebSocketLike;
    try {
      ws = new this.WS(this.url());
    } catch {
      this.reconnectSoon();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      if (ws !== this.ws) return;
      const hello: Record<string, unknown> = { type: "hello", token: this.opts.token, deltas: this.opts.deltas };
      if (this.opts.as) hello.as = this.opts.as;
      const since = this.held ?? (this.opts.sinceVersion === undefined ? 0 : this.opts.sinceVersion);
      if (since !== null) hello.since_version = since;
      if (this.sendProtocol) hello.protocol = this.opts.protocol ?? PROTOCOL;
      ws.send(JSON.stringify(hello));
      this.lastHeard = Date.now();
      this.startHeartbeat(ws);
    };
    ws.onmessage = (ev) => {
      if (ws !== this.ws) return;
      this.lastHeard = Date.now();
      const received = Date.now() / 1000;
      let msg: unknown;
      try {
        msg = JSON.parse(String(ev.data));
      } catch {
        return;
      }
      if (msg && typeof msg === "object" && !Array.isArray(msg)) this.handle(msg as Record<string, unknown>, received);
    };
    ws.onerror = () => {}; // a close follows
    ws.onclose = (ev) => {
      if (ws !== this.ws) return;
      this.ws = null;
      this.stopHeartbeat();
      this.emit("close", { code: ev.code, reason: ev.reason });
      this.onClose(ev.code, ev.reason);
    };
  }

  private onClose(code: number, reason: string): void {
    if (this.stopped) return;
    const err = this.lastError;
    if (code === 4001) {
      this.finish("replaced", code, reason || "a newer connection for this seat replaced this one");
      return;
    }
    if (code === 4401 && err?.code === "bad_hello" && this.sendProtocol && /'protocol'/.test(err.message)) {
      this.sendProtocol = false; // a server older than the protocol field: say hello without it
      noProtocolField.add(this.url());
      this.open();
      return;
    }
    if (FATAL[code]) {
      this.finish("failed", code, err ? `${err.code}: ${err.message}` : FATAL[code]);
      return;
    }
    if (code === 1000 || code === 1001 || this.endedMessage) {
      this.finish("closed", code, reason || (this.endedMessage ? "the match is over" : "closed by the server"));
      return;
    }
    // 1006 (dropped), 1011, 1012 (restart), 1013, 4008, 4429, 4503, our own 4000 …: reconnect
    const retryAfter = Number((err as { retry_after?: unknown } | null)?.retry_after);
    this.reconnectSoon(Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined, code);
  }

  private finish(status: ConnectionStatus, code: number, reason: string): void {
    if (this.stopped) return;
    this.stopped = true;
    this.clearTimer();
    this.stopHeartbeat();
    const g = globalThis as { removeEventListener?: (t: string, f: () => void) => void };
    if (typeof g.removeEventListener === "function") g.removeEventListener("online", this.online);
    const ws = this.ws;
    this.ws = null;
    if (ws && ws.readyState <= OPEN) ws.close(1000, "leaving");
    this.rejectPending("closed", `the connection is ${status}: ${reason}`);
    this.setStatus(status, reason);
    this.closedResolve({ status, code, reason });
  }

  private rejectPending(code: string, message: string): void {
    for (const [seq, p] of this.pending) {
      if (p.timer) clearTimeout(p.timer);
      p.reject(new ActError(code, message, seq));
    }
    this.pending.clear();
  }

  private clearTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private reconnectSoon(delayMs?: number, code?: number): void {
    if (this.stopped || this.ws) return;
    const { initialDelayMs = 250, maxDelayMs = 5000, maxAttempts = Infinity } = this.opts.reconnect ?? {};
    if (this.attempt >= maxAttempts) {
      this.finish("failed", code ?? 1006, `no connection after ${this.attempt} attempts`);
      return;
    }
    this.clearTimer();
    const backoff = Math.min(maxDelayMs, initialDelayMs * 2 ** Math.min(this.attempt, 16)) * (0.5 + Math.random() / 2);
    const wait = delayMs ?? backoff;
    this.attempt += 1;
    this.setStatus("reconnecting", `retry in ${Math.ceil(wait / 1000)} s${code ? ` (close ${code})` : ""}`);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.open();
    }, wait);
  }

  private startHeartbeat(ws: WebSocketLike): void {
    this.stopHeartbeat();
    const every = this.opts.heartbeatMs ?? 5000;
    if (!every) return;
    const silence = this.opts.silenceMs ?? 15000;
    this.heartbeat = setInterval(() => {
      if (ws !== this.ws || ws.readyState !== OPEN) return;
      if (Date.now() - this.lastHeard > silence) {
        this.drop(); // onclose reconnects
        return;
      }
      this.send({ type: "ping", t: Date.now() });
    }, every);
    const h = this.heartbeat as { unref?: () => void };
    if (typeof h.unref === "function") h.unref(); // node: a quiet connection does not hold the process
  }

  private stopHeartbeat(): void {
    if (this.heartbeat !== null) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  private send(message: object): void {
    if (this.ws && this.ws.readyState === OPEN) this.ws.send(JSON.stringify(message));
  }

  // -- messages -------------------------------------------------------------------------------------

  private handle(msg: Record<string, unknown>, received: number): void {
    this.emit("message", msg);
    switch (msg.type) {
      case "state":
        this.onState(msg as unknown as StateMessage & { server_time?: number }, received);
        return;
      case "delta":
        this.onDelta(msg as unknown as DeltaMessage);
        return;
      case "ack": {
        const ack = msg as unknown as AckMessage;
        const p = this.pending.get(ack.seq);
        if (p) {
          this.pending.delete(ack.seq);
          if (p.timer) clearTimeout(p.timer);
          p.resolve(ack);
        }
        this.emit("ack", ack);
        return;
      }
      case "error":
        this.onError(msg as unknown as ErrorMessage & { retry_after?: number });
        return;
      case "ended": {
        const ended = msg as unknown as EndedMessage;
        const first = this.endedMessage === null;
        this.endedMessage = ended;
        if (first) {
          this.emit("ended", ended);
          this.endedResolve(ended);
        }
        return;
      }
      case "pong": {
        const pong = msg as unknown as PongMessage & { server_time?: number; t?: unknown };
        const sent = typeof pong.t === "number" ? pong.t / 1000 : undefined;
        this.clock.sample(pong.server_time, received, sent);
        return;
      }
      default:
        return;
    }
  }

  private onError(err: ErrorMessage & { retry_after?: number }): void {
    this.lastError = err;
    const seq = typeof err.seq === "number" ? err.seq : null;
    const p = seq === null ? undefined : this.pending.get(seq);
    if (p && seq !== null) {
      if (err.code === "too_many_messages") {
        // not served: resend with the same seq after retry_after seconds
        const wait = Math.max(0.1, Number(err.retry_after) || 1) * 1000;
        p.timer = setTimeout(() => { p.timer = undefined; if (this.hadState) this.send(p.message); }, wait);
        return;
      }
      this.pending.delete(seq);
      p.reject(new ActError(err.code, err.message, seq, err.version));
      return;
    }
    this.emit("error", err);
  }

  private onState(msg: StateMessage & { server_time?: number }, received: number): void {
    const { match_id, game, seat, viewer, status, prompts, view } = msg;
    this.head = { match_id, game, seat, viewer };
    this.doc = JSON.parse(JSON.stringify({ status, prompts, view }));
    this.held = msg.version;
    this.resyncing = false;
    this.clock.sample(msg.server_time, received);
    const first = !this.hadState;
    this.hadState = true;
    if (first) {
      if (this.attempt > 0 || this.state !== null) this.reconnects += 1;
      this.attempt = 0;
      this.setStatus("open");
    }
    this.deliver({ ...msg, events: this.fresh(msg.events) } as MatchState<View, Ev>);
    if (first) {
      // acts sent before a drop (or made while it was down) go out again with their same seq
      for (const p of this.pending.values()) {
        if (p.message.version === undefined) p.message.version = msg.version;
        if (!p.timer) this.send(p.message);
      }
    }
  }

  private onDelta(msg: DeltaMessage): void {
    if (this.doc === null || this.resyncing || this.head === null) return; // waiting for a full state
    const { base, version, patch } = msg;
    if (base !== this.held || !Number.isInteger(version) || version <= base) {
      this.resync();
      return;
    }
    let doc: typeof this.doc | null;
    try {
      doc = applyPatch(this.doc, patch, { inPlace: true });
    } catch {
      doc = null; // this.doc may be half patched: the next full state replaces it
    }
    if (doc === null || typeof doc !== "object" || !("status" in doc && "prompts" in doc && "view" in doc)) {
      this.resync();
      return;
    }
    this.doc = doc;
    this.held = version;
    const mine = JSON.parse(JSON.stringify(doc)); // the caller's own: what it changes is not held
    this.deliver({
      type: "state", ...this.head, version, status: mine.status, prompts: mine.prompts, view: mine.view,
      events: this.fresh(Array.isArray(msg.events) ? msg.events : []), via_delta: true,
    } as MatchState<View, Ev>);
  }

  /** The events not handed on before: `v` above the last one's. */
  private fresh(events: Event[] | undefined): MatchState<View, Ev>["events"] {
    const out: Event[] = [];
    let top = this.lastEventV;
    for (const ev of events ?? []) {
      if (typeof ev?.v !== "number" || ev.v <= this.lastEventV) continue;
      out.push(ev);
      if (ev.v > top) top = ev.v;
    }
    this.lastEventV = top;
    return out as MatchState<View, Ev>["events"];
  }

  private deliver(state: MatchState<View, Ev>): void {
    this.state = state;
    this.emit("state", state as unknown as MatchState);
    if (state.events.length) this.emit("events", state.events as unknown as MatchState["events"]);
  }

  private resync(): void {
    this.resyncing = true;
    this.resumes += 1;
    if (this.held !== null) this.send({ type: "resume", since_version: this.held });
  }
}
