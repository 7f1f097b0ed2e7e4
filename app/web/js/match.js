// The match page: connection, prompt bar with live countdowns, players, the game's board, event
// log, errors and the final standings. The game-specific part is the game's own board module, from
// its package (GET /api/v1/games lists its URL as `board`; served at /games/<id>/web/).
import { api, ApiError, savedPlayer } from "./api.js";
import { MatchConnection } from "./sdk/bannerfall-client.js";
import { h, replace, seatColour, secondsLeft, shortId, words, toast, ordinal } from "./dom.js";
import { gameTitle, games } from "./lobby.js";
import * as fallback from "./games/fallback.js";
import { loadWording, describeEvent, reasonText, scoreText } from "./wording.js";
import { rematchPanel } from "./rematch.js";

/** Load the board module of a game (the URL its package declares, from GET /games); a game without
 *  one, an unknown game, or a module that fails to load gets the raw view. */
export async function gameModule(id) {
  try {
    const info = (await games()).find((g) => g.id === id);
    if (info?.board) return await import(info.board);
  } catch (exc) {
    console.warn("no board for", id, exc);
  }
  return fallback;
}

const SEQ_KEY = "bannerfall.seq";

/** Sequence numbers never repeat for a seat, even across page reloads (docs/protocol.md, `act`). */
function nextSeq() {
  const last = Number(localStorage.getItem(SEQ_KEY) || 0);
  const seq = Math.max(last + 1, Date.now() * 1000);
  localStorage.setItem(SEQ_KEY, String(seq));
  return seq;
}

/** The status words of the badge ("connected" for the SDK's "open"; "offline" while the browser
 *  says it has no network). */
function statusWord(status) {
  if (status === "open") return "connected";
  if (status === "reconnecting" && navigator.onLine === false) return "offline";
  return status;
}

/**
 * The SDK's MatchConnection for this page (hello, deltas, resume, reconnects, resends by seq:
 * clients/js): every full state, `ended` and socket `error` go to `onMessage`; its status to
 * `onStatus(word, detail)`. The page adds what only a browser has: going offline drops the socket
 * at once (the SDK reconnects when the network is back), and seqs kept in localStorage.
 */
export function openConnection(matchId, token, onMessage, onStatus) {
  const conn = new MatchConnection({ matchId, token, nextSeq, silenceMs: 12000 });
  conn.on("state", onMessage);
  conn.on("ended", onMessage);
  conn.on("error", onMessage);
  conn.on("status", ({ status, detail }) => onStatus(statusWord(status), detail));
  const offline = () => {
    onStatus("offline", "no network");
    conn.drop();
  };
  window.addEventListener("offline", offline);
  conn.stopPage = () => {
    window.removeEventListener("offline", offline);
    conn.close();
  };
  return conn;
}

/** Text for the prompt bar: who the match waits for and how long. */
export function promptText(prompts, mySeat, name) {
  const parts = [];
  let mine = null;
  const bySeat = [];
  for (const p of prompts) {
    const left = secondsLeft(p.deadline_at);
    const time = left === null ? "" : `, ${left} s`;
    if (p.seat === mySeat && !p.submitted) mine = `Your move: ${words(p.kind)}${left === null ? "" : ` — ${left} s left`}`;
    bySeat.push({ p, time });
  }
  const waiting = bySeat.filter(({ p }) => !p.submitted && p.seat !== mySeat);
  const done = bySeat.filter(({ p }) => p.submitted);
  if (waiting.length) {
    parts.push("waiting for: " + waiting.map(({ p, time }) => `${name(p.seat)} (${words(p.kind)}${time})`).join(", "));
  }
  if (done.length) parts.push("submitted: " + done.map(({ p }) => name(p.seat)).join(", "));
  return { mine, others: parts.join(" · ") };
}

export async function renderMatch(root, matchId, { stillHere }) {
  const me = savedPlayer();
  replace(root, h("p.muted", "Loading match…"));
  await games().catch(() => null);
  // event wording shared with the CLI (/events.json); without it events read as their type
  await loadWording().catch((exc) => console.warn("no event wording", exc));
  let meta;
  try {
    meta = await api("GET", `/matches/${matchId}`);
  } catch (exc) {
    replace(root, h("section.card-panel", h("p.error", exc instanceof ApiError ? exc.message : String(exc)), h("a.button", { href: "#/" }, "Back to lobbies")));
    return () => {};
  }
  const module = await gameModule(meta.game);
  const names = meta.seats.map((s) => s.name || `seat ${s.seat}`);
  const bots = meta.seats.map((s) => s.bot);
  const mySeatFromMeta = meta.seats.findIndex((s) => s.player_id === me.player.id);

  const connBadge = h("span#conn-status.badge", "connecting");
  const promptBar = h("div#prompt-bar.prompt-bar");
  const errorBar = h("div#error-bar.error-bar", { hidden: true });
  const seatsBox = h("div#seats.panel");
  const boardBox = h("div#board.board-area");
  const controls = h("div#controls.panel");
  const logList = h("ol#event-log.log");
  const outcomeBox = h("div#outcome");
  const phaseLine = h("span.phase-line");
  replace(root,
    h("section.match", { dataset: { game: meta.game } },
      h("div.match-head",
        h("h2", gameTitle(meta.game)), phaseLine,
        h("span.muted.small", `match ${shortId(matchId)}`),
        connBadge,
        h("a.button.small", { href: "#/" }, "Lobbies")),
      promptBar, errorBar, outcomeBox,
      h("div.match-body",
        boardBox,
        h("aside.side", seatsBox, controls,
          h("div.panel.log-panel", h("h3", "Events"), logList)))));

  let last = null;
  let ended = null;
  let errorTimer = null;
  const plainName = (seat) => names[seat] ?? `seat ${seat}`;

  function showError(err) {
    const text = `${err.message}`;
    replace(errorBar, h("strong", "Not allowed: "), text, h("span.code", ` (${err.code})`));
    errorBar.hidden = false;
    clearTimeout(errorTimer);
    errorTimer = setTimeout(() => { errorBar.hidden = true; }, 10000);
  }

  const ctx = {
    board: boardBox,
    panel: controls,
    seat: null,
    readOnly: false,
    admin: false,
    name: plainName,
    bots,
    act: async (action) => {
      try {
        const { version } = await conn.act(action);
        errorBar.hidden = true;
        return version;
      } catch (err) {
        showError(err);
        throw err;
      }
    },
  };
  const board = module.createBoard(ctx);

  function renderPrompt() {
    if (!last) return;
    const status = ended?.status || last.status;
    promptBar.className = "prompt-bar";
    document.title = `${gameTitle(meta.game)} — Bannerfall`;
    if (status !== "running") {
      replace(promptBar, status === "aborted" ? "This match was aborted." : "The match is over.");
      promptBar.classList.add("over");
      return;
    }
    const { mine, others } = promptText(last.prompts, last.seat, plainName);
    if (mine) promptBar.classList.add("mine");
    document.title = `${mine ? "● Your move — " : ""}${gameTitle(meta.game)} — Bannerfall`;
    replace(promptBar, mine ? h("strong.your-move", mine) : null, others ? h("span.waiting", others) : null);
  }

  function renderSeats() {
    const view = last.view;
    const current = new Set(last.prompts.filter((p) => !p.submitted).map((p) => p.seat));
    const order = view.seat_order || names.map((_, i) => i);
    replace(seatsBox, h("h3", "Players"), h("ul.seat-list", order.map((seat) => h("li", {
      class: [current.has(seat) ? "active" : "", seat === last.seat ? "me" : ""].join(" "), dataset: { seat },
    },
    h("span.swatch", { style: { background: seatColour(seat) } }),
    h("span.seat-name", h("span.seat-label", plainName(seat)), seat === last.seat ? h("span.tag.you", "you") : null, bots[seat] ? h("span.tag", { title: `${bots[seat]} bot` }, "bot") : null),
    h("span.seat-stats", module.seatStats ? module.seatStats(view, seat) : ""),
    current.has(seat) ? h("span.turn-mark", { title: "the match waits for this player" }, "◀") : null))));
  }

  function addEvents(events, incomplete) {
    if (incomplete) logList.prepend(h("li.log-minor", "(some earlier events are no longer available)"));
    for (const ev of events) {
      // the line's words come from /events.json (the same as the CLI's); a game module may add a
      // detail (cards, dice, duels) shown when the line is opened
      const w = describeEvent(meta.game, ev, plainName);
      if (!w) continue;
      const d = module.describe ? module.describe(ev, plainName) : null;
      const detail = d && d.detail;
      // an event type events.json does not know yet keeps its game module's own words, if any
      const text = w.known || !d?.text ? w.text : d.text;
      const item = h("li", { class: `log-${w.kind || "normal"}`, dataset: { type: ev.type, v: ev.v } },
        h("span.log-bar", { style: { background: seatColour(w.seat) } }),
        detail ? h("details", h("summary", text), detail) : h("span", text));
      logList.prepend(item);
    }
    while (logList.children.length > 300) logList.lastChild.remove();
  }

  function renderOutcome() {
    const outcome = ended?.outcome || last?.view?.outcome;
    const status = ended?.status || last?.status;
    if (!outcome || status === "running") return;
    const ranks = Object.entries(outcome.ranks || {}).map(([seat, rank]) => ({ seat: Number(seat), rank }))
      .sort((a, b) => a.rank - b.rank || a.seat - b.seat);
    replace(outcomeBox, h("section.card-panel.standings#standings",
      h("h2", status === "aborted" ? "Match aborted" : "Final standings"),
      h("p.muted", status === "aborted" ? words(outcome.reason || "") : `Ended: ${reasonText(meta.game, outcome.reason)}`),
      ranks.length ? h("table.list",
        h("thead", h("tr", h("th", "Place"), h("th", "Player"), h("th", "Score"))),
        h("tbody", ranks.map(({ seat, rank }) => h("tr", { class: seat === last?.seat ? "me" : "", dataset: { seat } },
          h("td", { class: rank === 1 ? "winner" : "" }, ordinal(rank)),
          h("td", h("span.swatch", { style: { background: seatColour(seat) } }), plainName(seat), seat === last?.seat ? " (you)" : ""),
          h("td", outcome.scores?.[seat] === undefined ? "" : scoreText(meta.game, outcome.scores[seat]))))) ) : null,
      ended?.seed ? h("p.muted.small.mono", `seed ${ended.seed} · sha256 ${ended.seed_hash}`) : null,
      rematchEl(),
      h("a.button", { href: "#/" }, "Back to lobbies")));
  }

  // the rematch offer, for the match's human players (made once, kept across re-renders)
  let rematch = null;
  function rematchEl() {
    const mine = meta.seats[mySeatFromMeta];
    if (!mine || mine.bot) return null;
    if (!rematch) rematch = rematchPanel(matchId);
    return rematch.el;
  }

  function onMessage(msg) {
    if (msg.type === "state" && msg.view && msg.view.unavailable) {
      // a match the server cannot replay (its rules version is not installed): the reason, no board
      last = msg;
      ctx.seat = msg.seat;
      phaseLine.textContent = "";
      replace(boardBox, h("div.panel.unavailable", h("p", msg.view.unavailable.message)));
      renderPrompt();
      if (msg.status !== "running") renderOutcome();
      window.__bannerfall.state = msg;
    } else if (msg.type === "state") {
      const first = !last;
      last = msg;
      ctx.seat = msg.seat;
      ctx.readOnly = msg.seat === null;
      phaseLine.textContent = module.phaseText ? module.phaseText(msg.view) : "";
      board.update(msg);
      renderSeats();
      renderPrompt();
      addEvents(msg.events || [], msg.events_complete === false);
      if (msg.status !== "running") renderOutcome();
      window.__bannerfall.state = msg;
    } else if (msg.type === "ended") {
      ended = msg;
      renderPrompt();
      renderOutcome();
    } else if (msg.type === "error") {
      showError(msg);
      toast(`${msg.message} (${msg.code})`, "error");
    }
  }

  function onStatus(status, detail) {
    connBadge.textContent = words(status) + (detail && status !== "connected" ? ` — ${detail}` : "");
    connBadge.className = `badge conn-${status}`;
    if (status === "replaced") {
      replace(errorBar, "This match is open in another tab or window. ",
        h("button.small", { type: "button", on: { click: () => { conn.reconnect(); errorBar.hidden = true; } } }, "Play here"));
      errorBar.hidden = false;
    }
  }

  const conn = openConnection(matchId, me.token, onMessage, onStatus);
  window.__bannerfall = { conn, state: null, seat: mySeatFromMeta };
  const ticker = setInterval(() => {
    if (!stillHere()) return;
    renderPrompt();
  }, 250);

  return () => {
    document.title = "Bannerfall";
    clearInterval(ticker);
    rematch?.stop();
    conn.stopPage();
    board.destroy();
  };
}
