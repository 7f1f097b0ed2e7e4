// Load generator for bench/bench_server.py (Node.js + ws).
//
//   node loadgen.mjs CONFIG.json
//
// CONFIG: {"url": "ws://127.0.0.1:PORT", "matches": [{"id": MATCH_ID, "tokens": [t0, t1, t2, t3]}],
//          "deflate": bool, "dealing_per_turn": int, "parse": "actor" | "all" | "scan",
//          "connect_concurrency": int}
//
// Opens one socket per seat (hello with that seat's token), then reads commands from stdin, one
// JSON object per line, and answers each with one JSON line on stdout:
//   {"cmd": "run", "mode": "closed", "seconds": S}          every idle match sends its next action
//                                                            as soon as the previous one is acked and
//                                                            its state is in (at most one in flight)
//   {"cmd": "run", "mode": "open", "seconds": S, "rate": R} R actions/s, paced on a 1 ms timer, each
//                                                            given to an idle match; when none is idle
//                                                            the send waits and its latency is also
//                                                            counted from its scheduled time
//   {"cmd": "quit"}
//
// Only the seat on turn may act in Provinces: the action is `set_dealing` (cycling the three modes)
// `dealing_per_turn` times, then `end_turn`. Every message on every socket is counted. "parse":
// "actor" JSON-parses acks/errors and the states arriving on the acting seat's socket and only scans
// the others (type, version and the first prompt's seat are read from the raw bytes: the server's
// key order is fixed), "all" parses everything, "scan" parses nothing but acks/errors.
import fs from "node:fs";
import readline from "node:readline";
import { performance } from "node:perf_hooks";
import WebSocket from "ws";

const cfg = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const MODES = ["evenly", "randomly", "most_unevenly"];
const parseMode = cfg.parse || "actor";
const dealingPerTurn = cfg.dealing_per_turn ?? 1;

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
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
    this.msgs = { ack: 0, state: 0, error: 0, ended: 0, other: 0 };
    this.bytes = 0;
    this.stateBytes = 0;
    this.stateSizes = [];
    this.byType = {};
    this.backlog = [];
    this.maxBacklog = 0;
    this.ended = 0;
    this.cpu0 = process.cpuUsage();
    this.eluStart = performance.eventLoopUtilization();
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
    this.version = -1;
    this.needVersion = 0;
    this.seatOnTurn = null;
    this.turnSeat = null;
    this.turnActions = 0;
    this.inFlight = null;
    this.ended = false;
    this.resync = false;
    this.queued = false;
  }

  isIdle() {
    return !this.ended && this.inFlight === null && this.version >= this.needVersion && this.seatOnTurn !== null;
  }

  nextAction() {
    const seat = this.seatOnTurn;
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
    const seat = this.seatOnTurn;
    const action = this.nextAction();
    const seq = ++this.seqs[seat];
    const now = performance.now();
    this.inFlight = { seat, seq, t: now, sched: schedTime ?? now, type: action.type };
    this.sockets[seat].send(JSON.stringify({ type: "act", seq, action, version: this.version }));
    if (phase) {
      phase.sent++;
      phase.byType[action.type] = (phase.byType[action.type] || 0) + 1;
    }
  }

  dispatch() {
    if (!phase || !phase.sending || !this.isIdle()) return;
    if (phase.mode === "closed") {
      this.send();
    } else if (phase.backlog.length) {
      this.send(phase.backlog.shift());
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
      let version, promptSeat;
      if (parseMode === "all" || (parseMode === "actor" && this.inFlight === null && seat === this.seatOnTurn)) {
        const msg = JSON.parse(buf.toString());
        version = msg.version;
        promptSeat = msg.prompts.length ? msg.prompts[0].seat : null;
      } else {
        ({ version, seat: promptSeat } = scanState(buf));
      }
      if (p) {
        p.msgs.state++;
        p.stateBytes += buf.length;
        if (p.stateSizes.length < 200000) p.stateSizes.push(buf.length);
      }
      if (version > this.version || this.resync) {
        this.resync = false;
        this.version = version;
        this.seatOnTurn = promptSeat;
        this.dispatch();
      }
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
        this.needVersion = msg.version;
        this.dispatch();
      }
      return;
    }
    if (c === 101 /* e */ && buf[10] === 110 /* n: ended */) {
      if (p) {
        p.msgs.ended++;
        p.ended++;
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
        this.resync = true;
        this.turnSeat = null;
        this.sockets[seat].send(JSON.stringify({ type: "resume", since_version: Math.max(this.version, 0) }));
      }
    } else if (p) {
      p.msgs.other++;
    }
  }
}

// ---------------------------------------------------------------------------- connecting
function connect(match, seat) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${cfg.url}/ws/matches/${match.id}`, { perMessageDeflate: !!cfg.deflate });
    let first = true;
    const timer = setTimeout(() => reject(new Error(`connect timeout ${match.id}/${seat}`)), 60000);
    ws.on("open", () => ws.send(JSON.stringify({ type: "hello", token: match.tokens[seat] })));
    ws.on("message", (data) => {
      if (first) {
        first = false;
        clearTimeout(timer);
        const msg = JSON.parse(data.toString());
        if (msg.type !== "state") return reject(new Error(`hello answered with ${data.toString().slice(0, 200)}`));
        if (msg.seat !== seat) return reject(new Error(`socket ${seat} got seat ${msg.seat}`));
        if (String(ws.extensions).includes("permessage-deflate")) deflated++;
        if (msg.version > match.version) {
          match.version = msg.version;
          match.seatOnTurn = msg.prompts.length ? msg.prompts[0].seat : null;
        }
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
  return { sockets: jobs.length, connect_s: (performance.now() - t0) / 1000, deflate_negotiated: deflated };
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
    phase = new Phase(cmd.mode, cmd.seconds, cmd.rate);
    const p = phase;
    idle.length = 0;
    for (const m of matches) m.queued = false;
    let ticker = null;
    if (p.mode === "closed") {
      for (const m of matches) m.dispatch();
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
      const sizes = Int32Array.from(p.stateSizes).sort();
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
            latency: summary(p.lat), sched_latency: p.mode === "open" ? summary(p.schedLat) : null,
            max_backlog: p.maxBacklog, matches_ended: p.ended, in_flight_left: busy,
            loadgen_cpu_s: (cpu.user + cpu.system) / 1e6, loadgen_event_loop_utilization: elu.utilization,
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
  out({ event: "ready", ...info });
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const cmd = JSON.parse(line);
    if (cmd.cmd === "run") {
      out(await run(cmd));
    } else if (cmd.cmd === "quit") {
      break;
    }
  }
  quitting = true;
  for (const m of matches) for (const ws of m.sockets) ws.terminate();
  out({ event: "bye" });
  process.exit(0);
}

main().catch((err) => {
  out({ event: "fatal", error: String(err && err.stack || err) });
  process.exit(1);
});
