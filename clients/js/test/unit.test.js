// The connection's rules on scripted sockets (no server): hello and its protocol field, the close
// codes (reconnect or stop), resends with the same seq, the server clock, events once by v.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MatchConnection, ServerClock } from "@bannerfall/client";

class FakeSocket {
  static all = [];
  constructor(url) { this.url = url; this.readyState = 1; this.sent = []; FakeSocket.all.push(this); }
  send(text) { this.sent.push(JSON.parse(text)); }
  close(code = 1000, reason = "") { this.shut(code, reason); }
  terminate() { this.shut(1006, ""); }
  shut(code, reason) {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }
  open() { this.onopen?.(); }
  recv(msg) { this.onmessage?.({ data: JSON.stringify(msg) }); }
}

const state = (version, extra = {}) => ({
  type: "state", match_id: "m1", game: "toy", version, status: "running", seat: 0, viewer: "seat",
  prompts: [{ seat: 0, kind: "turn", phase_id: version, simultaneous: false, submitted: false, deadline_at: 2e9 }],
  view: { n: version }, events: [], ...extra,
});

function connection(options = {}) {
  FakeSocket.all = [];
  const clock = new ServerClock();
  const conn = new MatchConnection({ baseUrl: "https://example.test/", matchId: "m 1", token: "tok", WebSocket: FakeSocket,
    heartbeatMs: 0, clock, reconnect: { initialDelayMs: 1, maxDelayMs: 2 }, ...options });
  return { conn, clock, socket: (i) => FakeSocket.all[i] };
}

const next = (conn, type) => new Promise((resolve) => { const off = conn.on(type, (v) => { off(); resolve(v); }); });

test("hello: token, deltas, since_version 0, protocol 1; the socket URL", () => {
  const { conn, socket } = connection();
  socket(0).open();
  assert.equal(socket(0).url, "wss://example.test/ws/matches/m%201");
  assert.deepEqual(socket(0).sent[0], { type: "hello", token: "tok", deltas: true, since_version: 0, protocol: 1 });
  conn.close();
});

test("a server without hello.protocol: hello again without it, at once, and for later connections", async () => {
  const { conn, socket } = connection({ baseUrl: "http://old.test" });
  socket(0).open();
  socket(0).recv({ type: "error", code: "bad_hello", message: "hello does not take 'protocol'; its fields are ..." });
  socket(0).close(4401, "bad_hello");
  assert.equal(FakeSocket.all.length, 2);
  socket(1).open();
  assert.equal(socket(1).sent[0].protocol, undefined);
  socket(1).recv(state(0));
  assert.equal(conn.status, "open");
  conn.close();
  const later = connection({ baseUrl: "http://old.test" });
  later.socket(0).open();
  assert.equal(later.socket(0).sent[0].protocol, undefined);
  later.conn.close();
});

test("close codes: 1012 and 1006 reconnect with since_version; 4001 and 4404 stop", async () => {
  for (const code of [1011, 1012, 1013, 4008, 4429, 4503, 1006]) {
    const { conn, socket } = connection();
    socket(0).open();
    socket(0).recv(state(3));
    const reopened = next(conn, "status");
    socket(0).close(code, "");
    assert.equal((await reopened).status, "reconnecting");
    await new Promise((resolve) => { const t = setInterval(() => { if (FakeSocket.all.length > 1) { clearInterval(t); resolve(); } }, 1); });
    socket(1).open();
    assert.equal(socket(1).sent[0].since_version, 3, `after ${code}`);
    socket(1).recv(state(4));
    assert.equal(conn.reconnects, 1);
    conn.close();
  }
  for (const [code, status] of [[4001, "replaced"], [4404, "failed"], [4426, "failed"], [1000, "closed"]]) {
    const { conn, socket } = connection();
    socket(0).open();
    socket(0).recv(state(1));
    const pending = conn.act({ type: "x" });
    socket(0).close(code, "");
    const closed = await conn.closed;
    assert.equal(closed.status, status, `after ${code}`);
    await assert.rejects(pending, (err) => err.seq > 0 && (err.code === "closed" || err.code === "replaced"));
    assert.equal(FakeSocket.all.length, 1, `no reconnect after ${code}`);
  }
});

test("an act not answered when the socket goes is sent again with its seq and version", async () => {
  let seq = 100;
  const { conn, socket } = connection({ nextSeq: () => ++seq });
  socket(0).open();
  socket(0).recv(state(5));
  const acked = conn.act({ type: "end_turn" });
  assert.deepEqual(socket(0).sent[1], { type: "act", seq: 101, action: { type: "end_turn" }, version: 5 });
  socket(0).terminate();
  await new Promise((resolve) => { const t = setInterval(() => { if (FakeSocket.all.length > 1) { clearInterval(t); resolve(); } }, 1); });
  socket(1).open();
  assert.equal(socket(1).sent.length, 1, "only the hello before the first state");
  socket(1).recv(state(5));
  assert.deepEqual(socket(1).sent[1], { type: "act", seq: 101, action: { type: "end_turn" }, version: 5 });
  socket(1).recv({ type: "ack", seq: 101, version: 6 });
  assert.equal((await acked).version, 6);
  // an error with the act's seq rejects it with the server's code
  const refused = conn.act({ type: "bad" });
  socket(1).recv({ type: "error", code: "not_your_turn", message: "no", seq: 102 });
  await assert.rejects(refused, (err) => err.code === "not_your_turn" && err.seq === 102);
  conn.close();
});

test("server_time of a state and of a pong sets the clock; without it, no correction", () => {
  const { conn, socket, clock } = connection();
  socket(0).open();
  socket(0).recv(state(0));
  assert.equal(clock.offset, 0);
  assert.equal(clock.synced, false);
  const now = Date.now() / 1000;
  socket(0).recv(state(1, { server_time: now + 100 }));
  assert.ok(Math.abs(clock.offset - 100) < 1, String(clock.offset));
  socket(0).recv({ type: "pong", t: Date.now() - 10, server_time: Date.now() / 1000 + 50 });
  assert.ok(Math.abs(clock.offset - 50) < 1, String(clock.offset)); // the round trip's sample wins
  const left = conn.secondsLeft({ deadline_at: clock.now() + 30 });
  assert.ok(left > 29 && left <= 30, String(left));
  conn.close();
});

test("the Date header corrects only a clock more than 2 s off, until a socket sample", () => {
  const clock = new ServerClock();
  clock.sampleDateHeader(new Date(Date.now() + 1000).toUTCString());
  assert.equal(clock.offset, 0);
  clock.sampleDateHeader(new Date(Date.now() + 3_600_000).toUTCString());
  assert.ok(Math.abs(clock.offset - 3600) < 2);
  clock.sample(Date.now() / 1000 + 5);
  assert.ok(Math.abs(clock.offset - 5) < 1);
});

test("a gap resumes from the held version; deltas wait for the next state; events once by v", () => {
  const { conn, socket } = connection();
  const seen = [];
  conn.on("events", (evs) => seen.push(...evs.map((e) => e.v)));
  socket(0).open();
  socket(0).recv(state(1, { events: [{ v: 1, type: "a" }] }));
  socket(0).recv({ type: "delta", match_id: "m1", base: 1, version: 2,
    patch: [{ op: "replace", path: "/view/n", value: 2 }], events: [{ v: 2, type: "b" }] });
  assert.equal(conn.state.view.n, 2);
  assert.equal(conn.state.via_delta, true);
  socket(0).recv({ type: "delta", match_id: "m1", base: 3, version: 4, patch: [], events: [] });
  assert.deepEqual(socket(0).sent.at(-1), { type: "resume", since_version: 2 });
  socket(0).recv({ type: "delta", match_id: "m1", base: 2, version: 3, patch: [], events: [{ v: 3, type: "c" }] });
  assert.equal(conn.version, 2, "dropped while resyncing");
  socket(0).recv(state(4, { events: [{ v: 2, type: "b" }, { v: 3, type: "c" }, { v: 4, type: "d" }] }));
  assert.deepEqual(seen, [1, 2, 3, 4]);
  assert.equal(conn.resumes, 1);
  conn.close();
});
