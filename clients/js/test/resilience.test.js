// The connection's rules under failure (docs/protocol.md, "Close codes and bounded times"): a
// server restart in the middle of a match (close 1012, reconnect, resume from the held version,
// the act made while it was down sent on the new socket), a dropped connection (an act in flight
// resent with its same seq: applied once), and a replaced socket (4001: no reconnect).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@bannerfall/client";
import { URL, OPTIONS, botMatch, decide, restartServer, within } from "./helpers.js";

const mine = (conn) => (s) => s.status === "running" && s.prompts.some((p) => p.seat === s.seat && !p.submitted);

/** Every event handed on once: no (v, content) twice, versions never going back. */
function assertOnce(events) {
  const seen = new Set();
  let last = -1;
  for (const e of events) {
    const key = JSON.stringify(e);
    assert.ok(!seen.has(key), `event handed on twice: ${key}`);
    seen.add(key);
    assert.ok(e.v >= last, `event v ${e.v} after ${last}`);
    last = e.v;
  }
}

test("a server restart in the middle of a match: reconnect, resume, resend, play on to the end", async () => {
  const { client, matchId } = await botMatch("provinces");
  const conn = client.connect(matchId);
  const events = [];
  const closes = [];
  conn.on("events", (evs) => events.push(...evs));
  conn.on("close", (c) => closes.push(c.code));
  try {
    const before = await within(20_000, conn.waitFor(mine(conn)));
    const phase = before.prompts.find((p) => p.seat === before.seat).phase_id;
    const down = new Promise((resolve) => { const off = conn.on("close", () => { off(); resolve(); }); });
    const restarted = restartServer();
    await within(30_000, down, "the close of the restart");
    assert.equal(conn.status, "reconnecting");
    // an act made while the server is down waits for the next socket, then goes out with its seq
    const ack = conn.act({ type: "end_turn" }, { version: before.version });
    await within(60_000, restarted, "the restart");
    const acked = await within(30_000, ack, "the ack after the restart");
    assert.ok(acked.version > before.version);
    assert.ok(conn.reconnects >= 1, "the connection reconnected");
    assert.ok(closes.includes(1012) || closes.includes(1006), `closed with ${closes}`);
    assert.equal(conn.status, "open");
    // the turn passed exactly once: the next prompt of this seat is a later phase
    const after = await within(20_000, conn.waitFor(mine(conn)));
    assert.ok(after.prompts.find((p) => p.seat === after.seat).phase_id > phase);
    const ended = await within(90_000, conn.play((s, p) => decide("provinces", s, p)));
    assert.equal(ended.status, "finished");
    assertOnce(events);
  } finally {
    conn.close();
  }
});

test("a dropped connection: the act in flight is resent with its seq and applied once", async () => {
  const { client, matchId } = await botMatch("provinces");
  const conn = client.connect(matchId, { reconnect: { initialDelayMs: 50 } });
  const events = [];
  const sent = [];
  conn.on("events", (evs) => events.push(...evs));
  try {
    const before = await within(20_000, conn.waitFor(mine(conn)));
    const phase = before.prompts.find((p) => p.seat === before.seat).phase_id;
    const ack = conn.act({ type: "end_turn" });
    conn.drop(); // the socket goes under the act: it may or may not have reached the server
    const acked = await within(30_000, ack, "the ack after the drop");
    assert.ok(conn.reconnects >= 1);
    const turnEnded = events.filter((e) => e.type === "turn_ended" && e.seat === before.seat && e.v > before.version);
    await within(20_000, conn.waitFor((s) => s.version >= acked.version));
    // one end_turn: one turn_ended of this seat's turn, and its next prompt is one phase later or more
    assert.ok(turnEnded.length <= 1, JSON.stringify(turnEnded));
    const after = await within(30_000, conn.waitFor((s) => s.status !== "running" || mine(conn)(s)));
    if (after.status === "running") assert.ok(after.prompts.find((p) => p.seat === after.seat).phase_id > phase);
    const ended = await within(90_000, conn.play((s, p) => decide("provinces", s, p)));
    assert.equal(ended.status, "finished");
    assertOnce(events);
    assert.equal(events.filter((e) => e.type === "turn_ended" && e.seat === before.seat && e.turn === before.view.turn).length, 1);
  } finally {
    conn.close();
  }
});

test("a replaced socket: the older connection gets 4001 and stays closed; the newer plays", async () => {
  const { client, matchId } = await botMatch("conquest");
  const first = client.connect(matchId);
  await within(20_000, first.waitFor(() => true));
  const second = client.connect(matchId);
  try {
    const closed = await within(20_000, first.closed, "the 4001");
    assert.equal(closed.status, "replaced");
    assert.equal(closed.code, 4001);
    assert.equal(first.status, "replaced");
    // an act on the replaced connection is refused at once, never sent
    await assert.rejects(first.act({ type: "orders", attack: [] }), (err) => err.code === "closed");
    const ended = await within(90_000, second.play((s, p) => decide("conquest", s, p)));
    assert.equal(ended.status, "finished");
    assert.equal(first.reconnects, 0);
    assert.equal(first.status, "replaced");
  } finally {
    first.close();
    second.close();
  }
});

test("REST: guest and account sign-in, lobbies, quick play and parties", async () => {
  const ann = await Client.guest(URL, "ann");
  assert.equal((await ann.me()).name, "ann");
  const username = `sdk${Date.now().toString(36)}`;
  await ann.claim(username, "correct horse battery staple");
  const again = await Client.signIn(URL, username, "correct horse battery staple", "node test");
  assert.equal(again.player.id, ann.player.id);
  const other = await Client.signIn(URL, username, "wrong password 123").catch((e) => e);
  assert.equal(other.code, "bad_credentials");
  // a lobby another player joins; the host's wait sees the seat taken (long-poll or polling)
  const bob = await Client.guest(URL, "bob");
  const lobby = await again.createLobby("provinces", 2, { options: OPTIONS.provinces });
  const seen = again.waitLobby(lobby.id, (l) => l.seats.every((s) => s.player || s.bot), { timeoutMs: 20_000 });
  await bob.join(lobby.id);
  const full = await seen;
  assert.equal(full.seats[1].player.id, bob.player.id);
  const started = await again.start(lobby.id);
  assert.ok(started.match_id);
  const waited = await bob.waitLobby(lobby.id, undefined, { timeoutMs: 20_000 });
  assert.equal(waited.match_id, started.match_id);
  // quick play with bots after 0 s
  const carl = await Client.guest(URL, "carl");
  const ticket = await carl.queue("provinces", 2, { options: OPTIONS.provinces, botsAfterSeconds: 0 });
  const matched = await carl.waitForMatch(ticket.id, { timeoutMs: 30_000 });
  assert.ok(matched.match_id);
  // a party of two queued by its leader, bots in the rest
  const dee = await Client.guest(URL, "dee");
  const eve = await Client.guest(URL, "eve");
  const party = await dee.createParty("provinces", 3, { options: OPTIONS.provinces });
  await eve.joinParty(party.invite_code);
  await dee.queueParty(party.id, { botsAfterSeconds: 0 });
  const [pd, pe] = await Promise.all([dee.waitParty(party.id, undefined, { timeoutMs: 30_000 }),
    eve.waitParty(party.id, undefined, { timeoutMs: 30_000 })]);
  assert.ok(pd.ticket.match_id);
  assert.equal(pd.ticket.match_id, pe.ticket.match_id);
  const conn = eve.connect(pe.ticket.match_id);
  const s = await within(20_000, conn.waitFor(() => true));
  conn.close();
  assert.equal(s.game, "provinces");
  assert.notEqual(s.seat, null);
});
