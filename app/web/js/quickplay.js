// Quick play (docs/protocol.md, "Quick play"): the home page's panel (game, seats, bots after a
// wait) and the waiting view: elapsed time, a cancel button, then straight into the match.
// The waiting view learns of the match by long-polling GET /matchmaking/tickets/{id}?wait=25,
// one request at a time (no polling loop on a timer).
import { api, ApiError } from "./api.js";
import { h, replace, toast } from "./dom.js";
import { games, gameTitle } from "./lobby.js";
import { makeParty } from "./party.js";

const TICKET_KEY = "bannerfall.ticket";

function errorText(exc) {
  return exc instanceof ApiError ? `${exc.message} (${exc.code})` : String(exc?.message || exc);
}

/** The quick-play panel for the home page: a form that queues and opens the waiting view. */
export async function quickPlayPanel() {
  const box = h("section#quick-play-panel.card-panel", h("h2", "Quick play"));
  let all;
  try {
    all = await games();
  } catch (exc) {
    box.append(h("p.error", errorText(exc)));
    return box;
  }
  const gameSel = h("select#qp-game", all.map((g) => h("option", { value: g.id }, g.title)));
  const seats = h("input#qp-seats", { type: "number", value: 2 });
  const botsAfter = h("select#qp-bots", [
    h("option", { value: "" }, "never"), h("option", { value: "2" }, "after 2 s"),
    h("option", { value: "10" }, "after 10 s"), h("option", { value: "30", selected: true }, "after 30 s"),
    h("option", { value: "60" }, "after 60 s")]);
  const error = h("p.error");
  function limits() {
    const game = all.find((g) => g.id === gameSel.value);
    seats.min = game.min_seats;
    seats.max = game.max_seats;
    const v = Number(seats.value);
    if (!(v >= game.min_seats && v <= game.max_seats)) seats.value = Math.min(Math.max(v || 2, game.min_seats), game.max_seats);
  }
  gameSel.addEventListener("change", limits);
  limits();
  const form = h("form", {
    on: {
      submit: async (e) => {
        e.preventDefault();
        error.textContent = "";
        const body = { game: gameSel.value, seats: Number(seats.value), options: {} };
        if (botsAfter.value !== "") body.bots_after_seconds = Number(botsAfter.value);
        try {
          const ticket = await api("POST", "/matchmaking/tickets", body);
          localStorage.setItem(TICKET_KEY, ticket.id);
          location.hash = `#/queue/${ticket.id}`;
        } catch (exc) {
          const live = exc.code === "ticket_exists" && localStorage.getItem(TICKET_KEY);
          if (live) location.hash = `#/queue/${live}`;
          else error.textContent = errorText(exc);
        }
      },
    },
  },
  h("p.muted.small", "Play the next free people of your level; bots take the seats nobody took after the wait you choose."),
  h("label.option", h("span", "Game"), gameSel),
  h("label.option", h("span", "Seats"), seats),
  h("label.option", h("span", "Fill with bots"), botsAfter),
  h("div.row", h("button#quick-play.primary", { type: "submit" }, "Quick play"),
    h("button#party-make", { type: "button", title: "Play this game together with friends: they join with a link", on: { click: async () => {
      error.textContent = "";
      try {
        await makeParty({ game: gameSel.value, seats: Number(seats.value), options: {} });
      } catch (exc) {
        const mine = exc.code === "party_exists" && await api("GET", "/parties/mine").catch(() => null);
        if (mine) location.hash = `#/party/${mine.id}`;
        else error.textContent = errorText(exc);
      }
    } } }, "Play with friends")),
  error);
  const code = h("input#party-join-code", { type: "text", placeholder: "invite code or link", size: 28 });
  const join = h("form#party-join.row", { on: { submit: (e) => {
    e.preventDefault();
    const value = code.value.trim();
    const found = /#\/join\/([^/?#\s]+)/.exec(value);
    if (value) location.hash = `#/join/${found ? found[1] : encodeURIComponent(value)}`;
  } } }, h("span.muted.small", "Invited?"), code, h("button#party-join-go", { type: "submit" }, "Join party"));
  const yours = h("p#party-yours");
  api("GET", "/parties/mine").then((p) => replace(yours, h("a.button.small", { href: `#/party/${p.id}` },
    `Back to your party (${p.members.length} of ${p.seats})`))).catch(() => null);
  box.append(form, join, yours);
  return box;
}

/** The waiting view of ticket ``id``; returns a function that stops it. */
export function renderQueue(root, id, { stillHere }) {
  let stopped = false;
  let createdAt = null;
  const elapsed = h("strong#qp-elapsed", "0 s");
  const status = h("p#qp-status.muted", "Looking for players…");
  const cancel = h("button#qp-cancel", { type: "button", on: { click: async () => {
    cancel.disabled = true;
    try {
      await api("DELETE", `/matchmaking/tickets/${id}`);
      localStorage.removeItem(TICKET_KEY);
      location.hash = "#/";
    } catch (exc) {
      cancel.disabled = false;
      toast(errorText(exc), "error");  // e.g. ticket_claimed: the match is being made, it comes next
    }
  } } }, "Cancel");
  const title = h("h2", "Quick play");
  replace(root, h("section#queue-view.card-panel", title, h("p", "Waiting ", elapsed), status, h("div.row", cancel)));

  const clock = setInterval(() => {
    if (createdAt !== null) elapsed.textContent = `${Math.max(0, Math.floor(Date.now() / 1000 - createdAt))} s`;
  }, 500);

  async function poll(wait) {
    while (!stopped && stillHere()) {
      let ticket;
      try {
        ticket = await api("GET", `/matchmaking/tickets/${id}?wait=${wait}`);
      } catch (exc) {
        if (stopped) return;
        if (exc.status === 404 || exc.status === 410) {
          // 410 ticket_lost: the server lost the queue (restarted): the player is not queued any more
          localStorage.removeItem(TICKET_KEY);
          cancel.remove();
          const again = h("a#qp-again.button.primary", { href: "#/" }, "Queue again");
          replace(status, exc.status === 410 ? "The server lost your place in the queue (it restarted). Queue again."
            : errorText(exc), " ", again);
          return;
        }
        replace(status, errorText(exc));
        // 503 storage_unavailable (the queue's store is away) or the network: try again after Retry-After
        await new Promise((r) => setTimeout(r, 2000));
        continue;
      }
      if (stopped || !stillHere()) return;
      createdAt = Date.now() / 1000 - ticket.waited_seconds;
      await games().catch(() => null);  // the titles (gameTitle falls back to the id)
      if (stopped || !stillHere()) return;
      title.textContent = `Quick play: ${gameTitle(ticket.game)}, ${ticket.seats} seats`;
      if (ticket.status === "matched" && ticket.match_id) {
        localStorage.removeItem(TICKET_KEY);
        location.hash = `#/match/${ticket.match_id}`;
        return;
      }
      if (ticket.status === "cancelled") {
        localStorage.removeItem(TICKET_KEY);
        location.hash = "#/";
        return;
      }
      status.textContent = ticket.status === "claimed" ? "Match found — starting…" : "Looking for players…";
      wait = 25;
    }
  }
  poll(0);
  return () => {
    stopped = true;
    clearInterval(clock);
  };
}
