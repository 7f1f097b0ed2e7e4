// Parties (docs/protocol.md, "Parties"): #/party/<id> shows the members, the invite link, and for
// the leader the queue button; while queued a waiting indicator (elapsed seconds) and, for the
// leader, a cancel button. #/join/<code> joins with an invite link. The view long-polls
// GET /parties/{id}?wait=25&state=… (one request at a time) and opens the match when the party's
// ticket is matched.
import { api, ApiError, savedPlayer } from "./api.js";
import { h, replace, toast } from "./dom.js";
import { games, gameTitle } from "./lobby.js";

const SEEN_KEY = "bannerfall.party.seen";  // the last matched ticket this browser opened

function errorText(exc) {
  return exc instanceof ApiError ? `${exc.message} (${exc.code})` : String(exc?.message || exc);
}

/** Make a party for ``body`` ({game, seats, options}) and open it. */
export async function makeParty(body) {
  const party = await api("POST", "/parties", body);
  location.hash = `#/party/${party.id}`;
}

/** #/join/<code>: join the party and open it (or say why not). */
export async function renderJoin(root, code, { stillHere }) {
  replace(root, h("section#party-joining.card-panel", h("h2", "Joining a party…")));
  try {
    const party = await api("POST", "/parties/join", { code });
    if (stillHere()) location.replace(`#/party/${party.id}`);
  } catch (exc) {
    if (!stillHere()) return;
    const mine = exc.code === "in_party" ? await api("GET", "/parties/mine").catch(() => null) : null;
    replace(root, h("section#party-joining.card-panel", h("h2", "Could not join the party"),
      h("p.error#party-join-error", errorText(exc)),
      h("div.row", mine ? h("a.button", { href: `#/party/${mine.id}` }, "Open your party") : null,
        h("a.button", { href: "#/" }, "Home"))));
  }
}

/** The party view of ``id``; returns a function that stops it. */
export function renderParty(root, id, { stillHere }) {
  const me = savedPlayer();
  let stopped = false;
  let party = null;
  let queuedAt = null;
  const title = h("h2#party-title", "Party");
  const members = h("ul#party-members");
  const link = h("input#party-invite-link", { type: "text", readOnly: true, size: 48 });
  const code = h("code#party-code");
  const expires = h("span.muted.small#party-invite-expires");
  const copy = h("button.small#party-copy", { type: "button", on: { click: async () => {
    link.select();
    try { await navigator.clipboard.writeText(link.value); toast("Invite link copied"); } catch { /* selected */ }
  } } }, "Copy");
  const fresh = h("button.small#party-new-invite", { type: "button", on: { click: () => act("POST", `/parties/${id}/invite`) } }, "New link");
  const bots = h("select#party-bots", [
    h("option", { value: "" }, "never"), h("option", { value: "2" }, "after 2 s"),
    h("option", { value: "10" }, "after 10 s"), h("option", { value: "30", selected: true }, "after 30 s")]);
  const queue = h("button#party-queue.primary", { type: "button", on: { click: () => {
    const body = { bots_after_seconds: bots.value === "" ? null : Number(bots.value) };
    act("POST", `/parties/${id}/queue`, body);
  } } }, "Queue the party");
  const cancel = h("button#party-cancel", { type: "button", on: { click: () => act("DELETE", `/parties/${id}/queue`) } }, "Cancel");
  const leave = h("button#party-leave.danger", { type: "button", on: { click: async () => {
    leave.disabled = true;
    try {
      await api("POST", `/parties/${id}/leave`);
      location.hash = "#/";
    } catch (exc) {
      leave.disabled = false;
      toast(errorText(exc), "error");
    }
  } } }, "Leave the party");
  const elapsed = h("strong#party-elapsed", "0 s");
  const waiting = h("div#party-waiting.waiting", { hidden: true }, h("span.spinner", { "aria-hidden": "true" }),
    " In the queue: ", elapsed, h("span.muted#party-waiting-text", " — looking for players…"));
  const leaderBox = h("div.row#party-leader-controls", h("label.option", h("span", "Fill with bots"), bots), queue, cancel);
  const note = h("p.muted.small#party-note");
  const matchLink = h("a.button#party-match-link", { hidden: true }, "Open the party's match");
  const error = h("p.error#party-error");
  replace(root, h("section#party-view.card-panel", title,
    h("h3", "Members"), members,
    h("div#party-invite", h("p", "Invite friends with this link (or the code ", code, "): ", expires),
      h("div.row", link, copy, fresh)),
    waiting, leaderBox, matchLink, note, error, h("div.row", leave, h("a.button", { href: "#/" }, "Home"))));

  async function act(method, path, body) {
    error.textContent = "";
    try {
      await api(method, path, body);
    } catch (exc) {
      error.textContent = errorText(exc);
    }
  }

  const clock = setInterval(() => {
    if (queuedAt !== null) elapsed.textContent = `${Math.max(0, Math.floor(Date.now() / 1000 - queuedAt))} s`;
  }, 500);

  function show(p) {
    party = p;
    const leader = p.leader.id === me.player.id;
    title.textContent = `Party: ${gameTitle(p.game)}, ${p.seats} seats`;
    replace(members, p.members.map((m) => h("li", { dataset: { player: m.id } },
      h("span.member-name", m.name), m.id === p.leader.id ? h("span.tag", "leader") : null,
      m.id === me.player.id ? h("span.tag.you", "you") : null)));
    link.value = `${location.origin}/${p.invite_path}`;
    code.textContent = p.invite_code;
    expires.textContent = `valid until ${new Date(p.invite_expires_at * 1000).toLocaleTimeString()}`;
    fresh.hidden = !leader;
    const queued = p.status === "queued";
    waiting.hidden = !queued;
    if (queued) {
      queuedAt = Date.now() / 1000 - p.ticket.waited_seconds;
      replace(document.getElementById("party-waiting-text"),
        p.ticket.status === "claimed" ? " — match found, starting…" : " — looking for players…");
    } else {
      queuedAt = null;
    }
    leaderBox.hidden = !leader;
    queue.hidden = queued;
    bots.disabled = queued;
    cancel.hidden = !queued;
    note.textContent = leader
      ? `${p.members.length} of ${p.seats} seats are yours; strangers from the queue (or bots) take the rest.`
      : "The leader queues the party; you go into the match together.";
    const t = p.ticket;
    matchLink.hidden = !(t && t.status === "matched" && t.match_id);
    if (!matchLink.hidden) matchLink.href = `#/match/${t.match_id}`;
    if (t && t.status === "matched" && t.match_id && localStorage.getItem(SEEN_KEY) !== t.id) {
      localStorage.setItem(SEEN_KEY, t.id);
      location.hash = `#/match/${t.match_id}`;
      return true;
    }
    return false;
  }

  async function poll() {
    let state = null;
    while (!stopped && stillHere()) {
      let p;
      try {
        const q = state ? `?wait=25&state=${encodeURIComponent(state)}` : "";
        p = await api("GET", `/parties/${id}${q}`);
      } catch (exc) {
        if (stopped || !stillHere()) return;
        if (exc.status === 404) {
          replace(root, h("section#party-view.card-panel", h("h2", "Party"),
            h("p#party-gone", "You are not in this party (you left, or it ended)."), h("a.button", { href: "#/" }, "Home")));
          return;
        }
        error.textContent = errorText(exc);
        await new Promise((r) => setTimeout(r, 2000));  // the network or the node: try again shortly
        continue;
      }
      if (stopped || !stillHere()) return;
      await games().catch(() => null);
      if (show(p)) return;
      state = p.state;
    }
  }
  // a match this browser opened before is not opened again when the party is shown
  api("GET", `/parties/${id}`).then((p) => {
    if (p.ticket && p.ticket.status === "matched" && !party) localStorage.setItem(SEEN_KEY, p.ticket.id);
  }).catch(() => null).finally(() => poll());
  return () => {
    stopped = true;
    clearInterval(clock);
  };
}
