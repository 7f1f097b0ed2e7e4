// Load generator for bench/bench_server.py (Node.js + ws).
//
//   node loadgen.mjs CONFIG.json
//
// CONFIG: {"url": "ws://127.0.0.1:PORT", "matches": [{"id": MATCH_ID, "tokens": [t0, t1, t2, t3]}],
//          "deflate": bool, "dealing_per_turn": int, "parse": "actor" | "all" | "scan",
//          "connect_concurrency": int, "full_states": bool,
//          "spectators": {"match": MATCH_ID, "tokens": [t, ...], "count": n}}
//
// Opens one socket per seat (hello with that seat's token and "deltas": true, or false with
// "full_states"), plus `spectators.count` sockets with "as": "spectator" on one match (tokens used
// round-robin; they only read: counted apart as spectator_*), then reads commands from stdin, one
// JSON object per line, and answers each with one JSON line on stdout:
//   {"cmd": "run", "mode": "closed", "seconds": S}          every idle match sends its next action
//                                                            as soon as the previous one is acked and
//                                                            its state is in (at most one in flight)
//   {"cmd": "run", "mode": "open", "seconds": S, "rate": R} R actions/s, paced on a 1 ms timer, each
//                                                            given to an idle match; when none is idle
//                                                            the send waits and its latency is also
//                                                            counted from its scheduled time
//   {"cmd": "run", "mode": "think", "seconds": S, "rate_per_match": R, "think_dist": "exp"|"uniform"}
//                                                            human pace: the seat on turn answers
//                                                            its prompt, as its own socket shows it,
//                                                            after a seeded think time (exponential,
//                                                            or uniform on 0.5-1.5 x the mean); the
//                                                            mean follows Little's law (seats thinking
//                                                            ÷ target rate, as genbase.ThinkPacer) so
//                                                            that the generator acts R x its matches
//                                                            per second (or "rate" in all);
//                                                            "think_adapt": false keeps the mean
//                                                            the previous phase reached
//   {"cmd": "quit"}
//
// More config: "spectators" may be a list of {"match", "tokens", "count"} (one per watched match);
// "source_addresses": ["127.0.0.1", "127.0.0.2", ...] are the sockets' local addresses, round-robin
// (more sockets than one address's ephemeral ports to one server port); "samples": true adds every
// latency sample (ms) to the result (latency_samples), so several generators' percentiles merge
// exactly; "bot_seed" seeds the think times. Every result has the generator's own event-loop lag
// (loadgen_loop_lag: a 5 ms ticker's lateness, as genbase.LagMonitor), so its tail is told from
// the server's.
//
// Only the seat on turn may act in Provinces: the action is `set_dealing` (cycling the three modes)
// `dealing_per_turn` times, then `end_turn`. Every message on every socket is counted. "parse":
// "actor" JSON-parses acks/errors and the states arriving on the acting seat's socket and only scans
// the others (type, version and the first prompt's seat are read from the raw bytes: the server's
// key order is fixed), "all" parses everything, "scan" parses nothing but acks/errors.
//
// Deltas (docs/protocol.md "Deltas, audiences and versions"): versions are per audience, so each
// seat's socket keeps its own version and its own {status, prompts} (and the view with "all"); a
// `state` always resets them (servers that send only states work unchanged), a `delta` whose base is
// the held version is applied (tiny add/remove/replace applier below; operations under /view are
// skipped unless the view is kept) and moves the version; any other base, or a patch that does not
// apply, sends {"type":"resume","since_version": held} and ignores deltas until the next state. With
// deltas on, states are always parsed (they are rare); deltas are always parsed (they are small).
// A match is idle when the ack of its last action is in, the actor's socket holds that version, and
// the seat on turn has seen its own prompt on its own socket. Spectator sockets only scan base and
// version (and resume on a gap).
import fs from "node:fs";
import readline from "node:readline";
import { performance } from "node:perf_hooks";
import WebSocket from "ws";

const cfg = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const MODES = ["evenly", "randomly", "most_unevenly"];
const parseMode = cfg.parse || "actor";
const dealingPerTurn = cfg.dealing_per_turn ?? 1;
const wantDeltas = !cfg.full_states;
const keepView = parseMode === "all";

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

// ---------------------------------------------------------------------------- think mode
// mulberry32: a small seeded generator (the think times are the same run to run for one seed)
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function unitThink(rng, dist) {
  if (dist === "exp") return -Math.log(1 - rng());
  if (dist === "uniform") return 0.5 + rng();
  throw new Error(`think_dist must be exp or uniform, not ${dist}`);
}

// The mean think time (s) follows Little's law: seats thinking (time-weighted, smoothed over 3 s)
// ÷ the target rate × the share of thinks that ended in a send, as genbase.ThinkPacer.
class ThinkPacer {
  constructor(rate, dist, thinkers) {
    unitThink(() => 0.5, dist);
    this.rate = rate;
    this.dist = dist;
    this.thinking = 0;
    this.thinkers = thinkers;
    this.answered = 1.0; // smoothed share of thinks that ended in a send
    this.ended = 0;
    this.sentN = 0;
    this.tau = 3.0;
    this.frozen = false; // a measured phase: the mean stays (genbase.ThinkPacer.frozen)
    this.meanS = Math.max(0.02, thinkers / rate);
    this.area = 0;
    this.tLast = this.tWindow = performance.now() / 1000;
  }

  setRate(rate) {
    this.rate = rate;
    if (!this.frozen) this.meanS = Math.max(0.02, this.answered * this.thinkers / rate);
  }

  account() {
    const t = performance.now() / 1000;
    this.area += this.thinking * (t - this.tLast);
    this.tLast = t;
  }

  startThink(rng) {
    this.account();
    this.thinking++;
    return unitThink(rng, this.dist) * this.meanS;
  }

  endThink(sent) {
    this.account();
    this.thinking = Math.max(0, this.thinking - 1);
    this.ended++;
    if (sent) this.sentN++;
  }

  tick() {
    this.account();
    const dt = this.tLast - this.tWindow;
    if (dt <= 0) return;
    const window = this.area / dt;
    this.area = 0;
    this.tWindow = this.tLast;
    const alpha = Math.min(1, dt / this.tau);
    this.thinkers += alpha * (window - this.thinkers);
    if (this.ended) {
      this.answered += alpha * Math.min(1, this.ended / 20) * (this.sentN / this.ended - this.answered);
      this.ended = 0;
      this.sentN = 0;
    }
    if (!this.frozen) this.meanS = Math.max(0.02, this.answered * this.thinkers / this.rate);
  }
}

let pacer = null;

// ---------------------------------------------------------------------------- own loop lag
// a 5 ms ticker notes how late it runs: this process was busy while acks may have waited in its sockets
const lagPeriod = 5;
let lags = [];
let lagNext = 0;
function lagTick() {
  const t = performance.now();
  lags.push(Math.max(0, t - lagNext));
  lagNext = t + lagPeriod;
  setTimeout(lagTick, lagPeriod);
}
function lagTake() {
  const l = lags;
  lags = [];
  const s = Float64Array.from(l).sort();
  return { max_ms: s.length ? Math.round(s[s.length - 1] * 1000) / 1000 : null, p99_ms: pct(s, 0.99),
           over_10ms: l.filter((x) => x > 10).length };
}

let opened = 0;
function wsOptions() {
  const o = { perMessageDeflate: !!cfg.deflate };
  const addrs = cfg.source_addresses;
  if (addrs && addrs.length) o.localAddress = addrs[opened++ % addrs.length];
  return o;
}

// ---------------------------------------------------------------------------- raw scanning
const KEY_VERSION = Buffer.from('"version":');
const KEY_PROMPTS = Buffer.from('"prompts":[');
const KEY_SEAT = Buffer.from('{"seat":');

function readInt(buf, pos) {
  let n = 0;
  let c = buf[pos];
  while (c >= 48 && c <= 57) {
    n = n * 10 + (c - 48);
    c = buf[++pos];
  }
  return n;
}

const KEY_BASE = Buffer.from('"base":');

function scanDelta(buf) {
  // {"type":"delta","match_id":..,"base":B,"version":V,"patch":.. (both keys come before the patch,
  // so their first occurrences are the message's own in either order)
  const b = buf.indexOf(KEY_BASE);
  const v = buf.indexOf(KEY_VERSION);
  return { base: readInt(buf, b + KEY_BASE.length), version: readInt(buf, v + KEY_VERSION.length) };
}

// ---------------------------------------------------------------------------- RFC 6902 (add/remove/replace)
class PatchError extends Error {}

function unescapeToken(t) {
  return t.replace(/~1/g, "/").replace(/~0/g, "~");
}

function listIndex(token, highest) {
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new PatchError(`bad index ${token}`);
  const i = Number(token);
  if (i > highest) throw new PatchError(`index ${i} out of range`);
  return i;
}

// Applies `ops` to `doc` in place and returns the document (a whole-document op replaces it).
function applyPatch(doc, ops) {
  for (const op of ops) {
    if (op.path === "") {
      if (op.op === "add" || op.op === "replace") { doc = structuredClone(op.value); continue; }
      throw new PatchError("cannot remove the document");
    }
    const tokens = op.path.slice(1).split("/").map(unescapeToken);
    let node = doc;
    for (const t of tokens.slice(0, -1)) {
      if (Array.isArray(node)) node = node[listIndex(t, node.length - 1)];
      else if (node !== null && typeof node === "object" && t in node) node = node[t];
      else throw new PatchError(`no ${t} in ${op.path}`);
    }
    const key = tokens[tokens.length - 1];
    const value = op.value === undefined ? undefined : structuredClone(op.value);
    if (Array.isArray(node)) {
      if (op.op === "add") {
        if (key === "-") node.push(value);
        else node.splice(listIndex(key, node.length), 0, value);
      } else if (op.op === "replace") node[listIndex(key, node.length - 1)] = value;
      else if (op.op === "remove") node.splice(listIndex(key, node.length - 1), 1);
      else throw new PatchError(`unsupported op ${op.op}`);
    } else if (node !== null && typeof node === "object") {
      if (op.op === "add") node[key] = value;
      else if (op.op === "replace" || op.op === "remove") {
        if (!(key in node)) throw new PatchError(`nothing at ${op.path}`);
        if (op.op === "replace") node[key] = value;
        else delete node[key];
      } else throw new PatchError(`unsupported op ${op.op}`);
    } else throw new PatchError(`${op.path} goes through a scalar`);
  }
  return doc;
}

function scanState(buf) {
  // {"type":"state","match_id":..,"game":..,"version":N,..,"prompts":[{"seat":S,..}] or []
  const v = buf.indexOf(KEY_VERSION);
  const version = readInt(buf, v + KEY_VERSION.length);
  const p = buf.indexOf(KEY_PROMPTS, v);
  let seat = null;
  if (p >= 0 && buf[p + KEY_PROMPTS.length] !== 93 /* ] */) {
    seat = readInt(buf, p + KEY_PROMPTS.length + KEY_SEAT.length);
  }
  return { version, seat };
}

// ---------------------------------------------------------------------------- state
class Phase {
  constructor(mode, seconds, rate) {
    this.mode = mode;
    this.seconds = seconds;
    this.rate = rate || 0;
    this.t0 = performance.now();
    this.tEnd = this.t0 + seconds * 1000;
    this.sending = true;
    this.sent = 0;
    this.acked = 0;
    this.ackedInWindow = 0;
    this.errors = {};
    this.lat = [];
    this.schedLat = [];
    this.msgs = { ack: 0, state: 0, delta: 0, error: 0, ended: 0, other: 0 };
    this.bytes = 0;
    this.stateBytes = 0;
    this.deltaBytes = 0;
    this.stateSizes = [];
    this.updateSizes = [];
    this.resumes = 0;
    this.specMsgs = { state: 0, delta: 0, other: 0 };
    this.specBytes = 0;
    this.specResumes = 0;
    this.byType = {};
    this.backlog = [];
    this.maxBacklog = 0;
    this.ended = 0;
    this.cpu0 = process.cpuUsage();
    this.eluStart = performance.eventLoopUtilization();
  }

  countUpdate(kind, size) {
    this.msgs[kind]++;
    if (kind === "state") {
      this.stateBytes += size;
      if (this.stateSizes.length < 200000) this.stateSizes.push(size);
    } else {
      this.deltaBytes += size;
    }
    if (this.updateSizes.length < 200000) this.updateSizes.push(size);
  }
}

let phase = null;
const matches = [];
const idle = [];

class Match {
  constructor(spec, index) {
    this.id = spec.id;
    this.index = index;
    this.tokens = spec.tokens;
    this.sockets = [];
    this.seqs = spec.tokens.map(() => 0);
    this.modes = spec.tokens.map(() => 0);
    // per seat socket: audience version, {status, prompts[, view]}, waiting for a resume's state
    this.versions = spec.tokens.map(() => -1);
    this.docs = spec.tokens.map(() => ({ prompts: [] }));
    this.resyncing = spec.tokens.map(() => false);
    this.lastActor = 0;
    this.needVersion = 0;
    this.turnSeat = null;
    this.turnActions = 0;
    this.inFlight = null;
    this.ended = false;
    this.queued = false;
    this.timer = null; // think mode: the pending think of the seat on turn
    this.rng = seeded(((cfg.bot_seed ?? 1) * 1000003 + index * 10) >>> 0);
  }

  // think mode: the seat on turn (as its own socket shows it) starts thinking, then answers
  think() {
    if (!phase || !phase.sending || phase.mode !== "think" || this.timer !== null || !this.isIdle()) return;
    const delay = pacer.startThink(this.rng);
    this.timer = setTimeout(() => {
      this.timer = null;
      const sent = !!(phase && phase.sending && phase.mode === "think" && this.isIdle() && this.send());
      pacer.endThink(sent);
    }, delay * 1000);
  }

  onTurn(seat) {
    // the seat on turn as seat `seat`'s socket last saw it
    const prompts = this.docs[seat].prompts;
    return prompts && prompts.length ? prompts[0].seat : null;
  }

  actor() {
    for (let s = 0; s < this.tokens.length; s++) if (!this.resyncing[s] && this.onTurn(s) === s) return s;
    return null;
  }

  isIdle() {
    return !this.ended && this.inFlight === null && this.versions[this.lastActor] >= this.needVersion
      && this.actor() !== null;
  }

  setState(seat, msg) {
    this.versions[seat] = msg.version;
    this.resyncing[seat] = false;
    this.docs[seat] = keepView ? { status: msg.status, prompts: msg.prompts, view: msg.view }
                               : { status: msg.status, prompts: msg.prompts };
  }

  resume(seat) {
    this.resyncing[seat] = true;
    this.sockets[seat].send(JSON.stringify({ type: "resume", since_version: Math.max(this.versions[seat], 0) }));
  }

  nextAction(seat) {
    if (this.turnSeat !== seat) {
      this.turnSeat = seat;
      this.turnActions = 0;
    }
    if (this.turnActions < dealingPerTurn) {
      this.turnActions++;
      this.modes[seat] = (this.modes[seat] + 1) % 3;
      return { type: "set_dealing", mode: MODES[this.modes[seat]] };
    }
    this.turnActions = 0;
    this.turnSeat = null;
    return { type: "end_turn" };
  }

  send(schedTime) {
    const seat = this.actor();
    if (seat === null) return false;
    const action = this.nextAction(seat);
    const seq = ++this.seqs[seat];
    const now = performance.now();
    this.inFlight = { seat, seq, t: now, sched: schedTime ?? now, type: action.type };
    this.sockets[seat].send(JSON.stringify({ type: "act", seq, action, version: this.versions[seat] }));
    if (phase) {
      phase.sent++;
      phase.byType[action.type] = (phase.byType[action.type] || 0) + 1;
    }
    return true;
  }

  dispatch() {
    if (phase && phase.mode === "think") { this.think(); return; }
    if (!phase || !phase.sending || !this.isIdle()) return;
    if (phase.mode === "closed") {
      this.send();
    } else if (phase.backlog.length) {
      const sched = phase.backlog.shift();
      if (!this.send(sched)) phase.backlog.unshift(sched);
    } else if (!this.queued) {
      this.queued = true;
      idle.push(this);
    }
  }

  onMessage(seat, buf) {
    const c = buf[9];
    const p = phase;
    if (p) p.bytes += buf.length;
    if (c === 115 /* s: state */) {
      if (p) p.countUpdate("state", buf.length);
      if (wantDeltas || parseMode === "all" || (parseMode === "actor" && this.inFlight === null && seat === this.onTurn(seat))) {
        this.setState(seat, JSON.parse(buf.toString()));
      } else {
        const { version, seat: promptSeat } = scanState(buf);
        this.versions[seat] = version;
        this.resyncing[seat] = false;
        this.docs[seat] = { prompts: promptSeat === null ? [] : [{ seat: promptSeat }] };
      }
      this.dispatch();
      return;
    }
    if (c === 100 /* d: delta */) {
      if (p) p.countUpdate("delta", buf.length);
      if (this.resyncing[seat]) return; // a resume is under way: its state resets everything
      const msg = JSON.parse(buf.toString());
      let ok = msg.base === this.versions[seat];
      if (ok) {
        try {
          const ops = keepView ? msg.patch : msg.patch.filter((op) => !op.path.startsWith("/view"));
          this.docs[seat] = applyPatch(this.docs[seat], ops);
        } catch (err) {
          if (!(err instanceof PatchError) && !(err instanceof TypeError)) throw err;
          ok = false;
        }
      }
      if (ok) {
        this.versions[seat] = msg.version;
      } else {
        if (p) p.resumes++;
        this.resume(seat);
      }
      this.dispatch();
      return;
    }
    if (c === 97 /* a: ack */) {
      const msg = JSON.parse(buf.toString());
      if (p) p.msgs.ack++;
      const f = this.inFlight;
      if (f && f.seat === seat && f.seq === msg.seq) {
        const now = performance.now();
        if (p) {
          p.acked++;
          if (now <= p.tEnd) p.ackedInWindow++;
          if (f.t >= p.t0 && f.t <= p.tEnd) {
            p.lat.push(now - f.t);
            if (p.mode === "open") p.schedLat.push(now - f.sched);
          }
        }
        this.inFlight = null;
        this.lastActor = seat;
        this.needVersion = msg.version;
        this.dispatch();
      }
      return;
    }
    if (c === 101 /* e */ && buf[10] === 110 /* n: ended */) {
      if (p) {
        p.msgs.ended++;
        if (!this.ended) p.ended++; // every seat socket gets it: counted once per match
      }
      this.ended = true;
      return;
    }
    const msg = JSON.parse(buf.toString());
    if (msg.type === "error") {
      if (p) {
        p.msgs.error++;
        p.errors[msg.code] = (p.errors[msg.code] || 0) + 1;
      }
      const f = this.inFlight;
      if (f && f.seat === seat && f.seq === msg.seq) {
        // our picture of the match was wrong: ask for a fresh state and go on from it
        this.inFlight = null;
        this.turnSeat = null;
        this.resume(seat);
      }
    } else if (p) {
      p.msgs.other++;
    }
  }
}

// ---------------------------------------------------------------------------- connecting
function connect(match, seat) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${cfg.url}/ws/matches/${match.id}`, wsOptions());
    let first = true;
    const timer = setTimeout(() => reject(new Error(`connect timeout ${match.id}/${seat}`)), 60000);
    ws.on("open", () => ws.send(JSON.stringify({ type: "hello", token: match.tokens[seat], deltas: wantDeltas })));
    ws.on("message", (data) => {
      if (first) {
        first = false;
        clearTimeout(timer);
        const msg = JSON.parse(data.toString());
        if (msg.type !== "state") return reject(new Error(`hello answered with ${data.toString().slice(0, 200)}`));
        if (msg.seat !== seat) return reject(new Error(`socket ${seat} got seat ${msg.seat}`));
        if (String(ws.extensions).includes("permessage-deflate")) deflated++;
        match.setState(seat, msg);
        resolve();
        return;
      }
      match.onMessage(seat, data);
    });
    ws.on("error", (err) => {
      if (first) reject(err);
      else out({ event: "socket_error", match: match.id, seat, error: String(err) });
    });
    ws.on("close", (code) => {
      if (!match.ended && !quitting) out({ event: "socket_closed", match: match.id, seat, code });
    });
    match.sockets[seat] = ws;
  });
}

let deflated = 0;
const spectatorSockets = [];

// A spectator socket: counts what it gets, keeps its audience version (scanned from the raw bytes),
// resumes on a gap. Never acts.
function connectSpectator(matchId, token) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${cfg.url}/ws/matches/${matchId}`, wsOptions());
    let first = true;
    let version = -1;
    let resyncing = false;
    const timer = setTimeout(() => reject(new Error(`spectator connect timeout ${matchId}`)), 60000);
    ws.on("open", () => ws.send(JSON.stringify({ type: "hello", token, as: "spectator", deltas: wantDeltas })));
    ws.on("message", (buf) => {
      if (first) {
        first = false;
        clearTimeout(timer);
        const msg = JSON.parse(buf.toString());
        if (msg.type !== "state" || msg.viewer !== "spectator") {
          return reject(new Error(`spectator hello answered with ${buf.toString().slice(0, 200)}`));
        }
        version = msg.version;
        resolve();
        return;
      }
      const p = phase;
      if (p) p.specBytes += buf.length;
      const c = buf[9];
      if (c === 115 /* state */) {
        if (p) p.specMsgs.state++;
        version = scanState(buf).version;
        resyncing = false;
      } else if (c === 100 /* delta */) {
        if (p) p.specMsgs.delta++;
        if (resyncing) return;
        const d = scanDelta(buf);
        if (d.base === version) {
          version = d.version;
        } else {
          if (p) p.specResumes++;
          resyncing = true;
          ws.send(JSON.stringify({ type: "resume", since_version: Math.max(version, 0) }));
        }
      } else if (p) {
        p.specMsgs.other++;
      }
    });
    ws.on("error", (err) => {
      if (first) reject(err);
      else out({ event: "socket_error", match: matchId, spectator: true, error: String(err) });
    });
    ws.on("close", (code) => {
      if (!quitting) out({ event: "socket_closed", match: matchId, spectator: true, code });
    });
    spectatorSockets.push(ws);
  });
}

async function connectAll() {
  const jobs = [];
  for (const m of matches) for (let s = 0; s < m.tokens.length; s++) jobs.push([m, s]);
  const t0 = performance.now();
  let next = 0;
  const workers = [];
  for (let w = 0; w < (cfg.connect_concurrency || 32); w++) {
    workers.push((async () => {
      while (next < jobs.length) {
        const [m, s] = jobs[next++];
        await connect(m, s);
      }
    })());
  }
  await Promise.all(workers);
  const specs = Array.isArray(cfg.spectators) ? cfg.spectators : cfg.spectators ? [cfg.spectators] : [];
  const specJobs = [];
  for (const spec of specs) for (let i = 0; i < (spec.count || 0); i++) specJobs.push([spec.match, spec.tokens[i % spec.tokens.length]]);
  let nextSpec = 0;
  const specWorkers = [];
  for (let w = 0; w < (cfg.connect_concurrency || 32); w++) {
    specWorkers.push((async () => {
      while (nextSpec < specJobs.length) {
        const [matchId, token] = specJobs[nextSpec++];
        await connectSpectator(matchId, token);
      }
    })());
  }
  await Promise.all(specWorkers);
  return { sockets: jobs.length, spectators: spectatorSockets.length, connect_s: (performance.now() - t0) / 1000,
           deflate_negotiated: deflated, deltas_requested: wantDeltas };
}

// ---------------------------------------------------------------------------- running
function pct(sorted, q) {
  if (!sorted.length) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return Math.round(sorted[i] * 1000) / 1000;
}

function summary(arr) {
  const s = Float64Array.from(arr).sort();
  const mean = s.length ? s.reduce((a, b) => a + b, 0) / s.length : null;
  return { n: s.length, mean_ms: mean && Math.round(mean * 1000) / 1000, p50_ms: pct(s, 0.5), p90_ms: pct(s, 0.9),
           p99_ms: pct(s, 0.99), p999_ms: pct(s, 0.999), max_ms: s.length ? Math.round(s[s.length - 1] * 1000) / 1000 : null };
}

function run(cmd) {
  return new Promise((resolve) => {
    let rate = cmd.rate;
    if (cmd.mode === "think") {
      rate = cmd.rate_per_match ? cmd.rate_per_match * matches.length : rate;
      if (!(rate > 0)) throw new Error("think mode needs rate_per_match or rate > 0");
      if (pacer === null) pacer = new ThinkPacer(rate, cmd.think_dist || "exp", Math.max(1, matches.length));
      pacer.frozen = false;
      pacer.setRate(rate);
      pacer.frozen = cmd.think_adapt === false; // the mean stays as the last phase left it
      pacer.tau = cmd.think_tau_s ?? 3.0; // (no pending-think re-timing here: one seat thinks per match)
    }
    phase = new Phase(cmd.mode, cmd.seconds, rate);
    const p = phase;
    idle.length = 0;
    for (const m of matches) m.queued = false;
    let ticker = null;
    const thinkers = [];
    const means = [];
    if (p.mode === "closed") {
      for (const m of matches) m.dispatch();
    } else if (p.mode === "think") {
      for (const m of matches) m.dispatch();
      ticker = setInterval(() => {
        pacer.tick();
        thinkers.push(pacer.thinkers);
        means.push(pacer.meanS);
      }, 250);
    } else {
      for (const m of matches) m.dispatch();
      let k = 0;
      ticker = setInterval(() => {
        const now = performance.now();
        while (p.t0 + (k * 1000) / p.rate <= now && p.t0 + (k * 1000) / p.rate <= p.tEnd) {
          const sched = p.t0 + (k * 1000) / p.rate;
          k++;
          let m = null;
          while (idle.length) {
            const cand = idle.shift();
            cand.queued = false;
            if (cand.isIdle()) { m = cand; break; }
          }
          if (m) m.send(sched);
          else p.backlog.push(sched);
        }
        if (p.backlog.length > p.maxBacklog) p.maxBacklog = p.backlog.length;
      }, 1);
    }
    setTimeout(() => {
      p.sending = false;
      if (ticker) clearInterval(ticker);
      const cpu = process.cpuUsage(p.cpu0);
      const elu = performance.eventLoopUtilization(p.eluStart);
      const windowS = (performance.now() - p.t0) / 1000;
      const msgsInWindow = { ...p.msgs };
      const bytesInWindow = p.bytes;
      const stateBytes = p.stateBytes;
      const deltaBytes = p.deltaBytes;
      const sizes = Int32Array.from(p.stateSizes).sort();
      const updateSizes = Int32Array.from(p.updateSizes).sort();
      const specBytes = p.specBytes;
      const specMsgs = { ...p.specMsgs };
      // let in-flight actions finish (their latencies count), then report
      const drainStart = performance.now();
      const drain = setInterval(() => {
        const busy = matches.some((m) => m.inFlight !== null && !m.ended);
        if (!busy || performance.now() - drainStart > 10000) {
          clearInterval(drain);
          const totalMsgs = Object.values(msgsInWindow).reduce((a, b) => a + b, 0);
          resolve({
            event: "result", mode: p.mode, seconds: windowS, target_rate: p.rate || null,
            sent: p.sent, acked: p.acked, acked_in_window: p.ackedInWindow,
            acks_per_s: p.ackedInWindow / windowS, sent_per_s: p.sent / windowS,
            actions_by_type: p.byType, errors: p.errors,
            messages_in_window: msgsInWindow, messages_per_ack: totalMsgs / Math.max(1, p.ackedInWindow),
            bytes_in_window: bytesInWindow, mean_state_bytes: stateBytes / Math.max(1, msgsInWindow.state),
            median_state_bytes: sizes.length ? sizes[sizes.length >> 1] : null,
            mean_delta_bytes: msgsInWindow.delta ? deltaBytes / msgsInWindow.delta : null,
            median_update_bytes: updateSizes.length ? updateSizes[updateSizes.length >> 1] : null,
            resumes: p.resumes, spectators: spectatorSockets.length, spectator_bytes_in_window: specBytes,
            spectator_messages_in_window: specMsgs, spectator_resumes: p.specResumes,
            latency: summary(p.lat), sched_latency: p.mode === "open" ? summary(p.schedLat) : null,
            max_backlog: p.maxBacklog, matches_ended: p.ended, in_flight_left: busy,
            loadgen_cpu_s: (cpu.user + cpu.system) / 1e6, loadgen_event_loop_utilization: elu.utilization,
            loadgen_loop_lag: lagTake(),
            think: p.mode === "think" ? {
              dist: pacer.dist, target_rate: p.rate, mean_think_s: Math.round(pacer.meanS * 1e4) / 1e4,
              answered_share: Math.round(pacer.answered * 1000) / 1000, adapted: !pacer.frozen,
              mean_think_s_avg: means.length ? Math.round(means.reduce((a, b) => a + b, 0) / means.length * 1e4) / 1e4 : null,
              thinkers_avg: thinkers.length ? Math.round(thinkers.reduce((a, b) => a + b, 0) / thinkers.length * 100) / 100 : null,
            } : null,
            ...(cfg.samples ? { latency_samples: p.lat.map((x) => Math.round(x * 1000) / 1000),
                                sched_latency_samples: p.mode === "open" ? p.schedLat.map((x) => Math.round(x * 1000) / 1000) : null }
                            : {}),
          });
          phase = null;
        }
      }, 5);
    }, cmd.seconds * 1000);
  });
}

let quitting = false;

async function main() {
  cfg.matches.forEach((spec, i) => matches.push(new Match(spec, i)));
  const info = await connectAll();
  lagNext = performance.now() + lagPeriod;
  setTimeout(lagTick, lagPeriod);
  out({ event: "ready", ...info });
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const cmd = JSON.parse(line);
    if (cmd.cmd === "run") {
      lagTake();
      out(await run(cmd));
    } else if (cmd.cmd === "quit") {
      break;
    }
  }
  quitting = true;
  for (const m of matches) for (const ws of m.sockets) ws.terminate();
  for (const ws of spectatorSockets) ws.terminate();
  out({ event: "bye" });
  process.exit(0);
}

main().catch((err) => {
  out({ event: "fatal", error: String(err && err.stack || err) });
  process.exit(1);
});
