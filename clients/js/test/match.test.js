// Whole matches of every game: the SDK plays one seat through its prompts (bots in the others),
// applying deltas, counting events once, and ends with `ended`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { botMatch, decide, within } from "./helpers.js";

for (const game of ["provinces", "conquest", "warrior"]) {
  test(`a whole ${game} match, one seat played by the SDK`, async () => {
    const { client, matchId } = await botMatch(game);
    const conn = client.connect(matchId);
    const events = [];
    const states = [];
    const acks = [];
    conn.on("events", (evs) => events.push(...evs));
    conn.on("state", (s) => states.push(s));
    conn.on("ack", (a) => acks.push(a));
    try {
      const ended = await within(90_000, conn.play((state, prompt) => decide(game, state, prompt)));
      assert.equal(ended.type, "ended");
      assert.ok(["finished", "aborted"].includes(ended.status), ended.status);
      assert.equal(ended.status, "finished", JSON.stringify(ended.outcome));
      assert.ok(acks.length > 0, "the SDK's seat acted");
      assert.ok(states.some((s) => s.via_delta), "deltas were applied");
      assert.equal(conn.resumes, 0, "no gap on a quiet connection");
      // events are handed on once each, in version order
      const vs = events.map((e) => e.v);
      assert.deepEqual(vs, [...vs].sort((a, b) => a - b));
      // the held document is the server's: a fresh socket's full state of the same version agrees
      const last = conn.state;
      assert.equal(last.status, "finished");
      const check = client.connect(matchId, { sinceVersion: null });
      const full = await within(10_000, check.waitFor((s) => !s.via_delta));
      check.close();
      assert.equal(full.version, last.version);
      assert.deepEqual(full.view, last.view);
      assert.deepEqual(full.prompts, last.prompts);
    } finally {
      conn.close();
    }
  });
}
