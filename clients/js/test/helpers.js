// What the SDK's tests share: the server they play on (BANNERFALL_URL), the test harness's control
// (BANNERFALL_CONTROL_URL: POST /restart restarts the server on the same database and port), and
// a player for each game's prompts, choosing from the legal actions the view lists.
import assert from "node:assert/strict";
import { Client } from "@bannerfall/client";

export const URL = process.env.BANNERFALL_URL;
export const CONTROL = process.env.BANNERFALL_CONTROL_URL;
if (!URL) throw new Error("set BANNERFALL_URL to a running server (tests/e2e/test_js_sdk.py does)");

/** Test lobby options: short matches (each game's test_options), quick deadlines. */
export const OPTIONS = {
  provinces: { max_rounds: 3 },
  conquest: { max_rounds: 2 },
  warrior: {},
};

/** Restart the server (same database, same port): resolves once it answers again. */
export async function restartServer() {
  assert.ok(CONTROL, "BANNERFALL_CONTROL_URL is not set");
  const resp = await fetch(`${CONTROL}/restart`, { method: "POST" });
  assert.equal(resp.status, 200, await resp.text());
}

/** A guest who made a lobby of `game` with bots in every other seat and started it. */
export async function botMatch(game, { seats = 2, bots = "random", name = "sdk-test" } = {}) {
  const client = await Client.guest(URL, name);
  const lobby = await client.createLobby(game, seats, { options: OPTIONS[game] });
  await client.addBots(lobby.id, bots);
  const started = await client.start(lobby.id);
  assert.ok(started.match_id);
  return { client, matchId: started.match_id };
}

const byRace = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * An action for `prompt` from what the view says is legal (docs/protocol.md, "Legal actions are
 * not sent"; the games' docs): the simplest legal answer of each prompt kind.
 */
export function decide(game, state, prompt) {
  const view = state.view;
  switch (game) {
    case "provinces":
      return { type: "end_turn" }; // always legal on the seat's turn (provinces.md, "Prompts")
    case "conquest": {
      const you = view.you ?? {};
      switch (prompt.kind) {
        case "orders":
          return { type: "orders", attack: (you.attackable ?? []).slice(0, 1) };
        case "defence":
          return { type: "defend", lands: [] };
        case "assign": {
          const lands = [...(you.battle_lands ?? [])].sort((a, b) => a - b);
          const size = you.hand_size || 2;
          const pool = (you.pool ?? []).map((c) => c.id);
          return { type: "assign", hands: Object.fromEntries(lands.map((l, i) => [String(l), pool.slice(size * i, size * i + size)])) };
        }
        case "decision":
          return { type: "decide", folds: [] };
        default:
          return null;
      }
    }
    case "warrior": {
      const d = view.decision;
      if (!d) return null;
      switch (d.kind) {
        case "keep":
          return { type: "keep", cards: d.hand.slice(0, d.keep).map((c) => c.id), attacks: {}, wizards: {} };
        case "place_wizards":
          return { type: "place_wizards", wizards: Object.fromEntries(d.wizards.map((w, i) => [w.id, [...d.nations].sort(byRace)[i % d.nations.length] ?? null]).filter(([, r]) => r)) };
        case "siege":
          return { type: "siege", shots: [] };
        case "target": {
          const option = d.options.find((o) => o.targets.length);
          if (!option) return null;
          const t = option.targets[0];
          const action = { type: "target", target: { seat: t.seat, race: t.race } };
          if (option.nation) action.nation = option.nation;
          if (d.force_size > 0) action.force = d.force_candidates.slice(0, d.force_size);
          return action;
        }
        case "lose":
          return { type: "lose", cards: d.candidates.slice(0, d.count) };
        case "continue":
          return { type: "stop" };
        case "reattack":
          return { type: "end_attack" };
        default:
          return null;
      }
    }
    default:
      throw new Error(`no player for ${game}`);
  }
}

/** Resolve when `promise` does, or fail the test after `ms`. */
export function within(ms, promise, what = "the match") {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms); }),
  ]);
}
