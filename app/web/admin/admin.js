// Admin console: matches with filters, one match's full state (hidden cards marked), its action
// log stepped through as a replay, abort. The admin signs in by pasting the admin token; it is
// kept in this tab's sessionStorage only.
import { api, ApiError } from "../js/api.js";
import { h, replace, fmtTime, shortId, words, seatColour, toast } from "../js/dom.js";
import { gameModule, promptText } from "../js/match.js";
import { grantsPanel } from "./grants.js";
import { loadWording, describeEvent } from "../js/wording.js";

const TOKEN_KEY = "bannerfall.admin";
// Hold'em Conquest specials in table order (conquest.md 5), for the grant form
const SPECIAL_IDS = ["shield", "scout", "loyalty", "spy", "corruption", "big_brother", "read_hand", "hound", "joker",
  "double_hand", "double_set", "double_income", "full_double_income", "insurance", "free_fold"];
const root = document.getElementById("app");
const who = document.getElementById("who");

let token = sessionStorage.getItem(TOKEN_KEY);
const adminApi = (method, path, body) => api(method, path, body, token);
const errText = (exc) => (exc instanceof ApiError ? `${exc.message} (${exc.code})` : String(exc?.message || exc));
// a server started without BANNERFALL_ADMIN_TOKEN has no admin: its admin routes say so (app/api/deps.py)
const noAdminToken = (exc) => exc instanceof ApiError && /^this server has no admin token/.test(exc.message || "");

// ------------------------------------------------------------------------------------ login
function login(message) {
  replace(who, null);
  const input = h("input#admin-token", { type: "password", placeholder: "admin token", autocomplete: "off" });
  const error = h("p.error", message || "");
  replace(root, h("form.card-panel.login", {
    on: {
      submit: async (e) => {
        e.preventDefault();
        token = input.value.trim();
        try {
          await adminApi("GET", "/admin/matches?limit=1");
          sessionStorage.setItem(TOKEN_KEY, token);
          console_();
        } catch (exc) {
          token = null;
          error.textContent = noAdminToken(exc) ? exc.message
            : exc.status === 403 ? "That token is not an admin's."
              : exc.status === 401 ? "This server knows no such token: paste the BANNERFALL_ADMIN_TOKEN it was started with." : errText(exc);
        }
      },
    },
  },
  h("h2", "Admin sign-in"),
  h("p.muted", "Paste the admin token (the server's BANNERFALL_ADMIN_TOKEN setting, or the token of a player with the admin role)."),
  input,
  h("button#admin-login.primary", { type: "submit" }, "Sign in"),
  error));
  input.focus();
  // before any token is typed: does this server have an admin at all?
  api("GET", "/admin/matches?limit=1", undefined, null).catch((exc) => {
    if (noAdminToken(exc) && !error.textContent) {
      error.id = "admin-no-token";
      error.textContent = exc.message;
    }
  });
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  token = null;
  stopTimers();
  login();
}

// ------------------------------------------------------------------------------------ console
const timers = new Set();
function every(ms, fn) {
  const id = setInterval(fn, ms);
  timers.add(id);
  return id;
}
function stopTimers() {
  for (const id of timers) clearInterval(id);
  timers.clear();
}

let games = [];
let filters = { status: "running", game: "" };
let selected = null; // match id
let detail = null; // the open match's controller

async function console_() {
  replace(who, h("button.small.link", { type: "button", on: { click: signOut } }, "sign out"));
  try {
    games = await api("GET", "/games", undefined, null);
  } catch {
    games = [];
  }
  const statusSel = h("select#filter-status", ["all", "running", "finished", "aborted"].map((s) =>
    h("option", { value: s, selected: (filters.status || "all") === s }, s)));
  const gameSel = h("select#filter-game", h("option", { value: "" }, "all games"),
    games.map((g) => h("option", { value: g.id, selected: filters.game === g.id }, g.title)));
  const list = h("div#admin-matches");
  const detailBox = h("section#match-detail.card-panel", h("p.muted", "Choose a match."));
  const onFilter = () => {
    filters = { status: statusSel.value === "all" ? "" : statusSel.value, game: gameSel.value };
    refreshList();
  };
  statusSel.addEventListener("change", onFilter);
  gameSel.addEventListener("change", onFilter);
  replace(root, h("div.admin",
    h("section.card-panel",
      h("h2", "Matches"),
      h("div.filters", h("label", "Status ", statusSel), h("label", "Game ", gameSel),
        h("button.small", { type: "button", on: { click: () => refreshList() } }, "refresh")),
      list),
    detailBox,
    grantsPanel(adminApi, SPECIAL_IDS)));

  let listRequest = 0;
  async function refreshList() {
    const ticket = ++listRequest; // an older answer arriving late must not replace a newer one
    const q = new URLSearchParams({ limit: "200" });
    if (filters.status) q.set("status", filters.status);
    if (filters.game) q.set("game", filters.game);
    let rows;
    try {
      rows = (await adminApi("GET", `/admin/matches?${q}`)).items; // the newest page ({items, next_cursor})
      if (ticket !== listRequest) return;
    } catch (exc) {
      if (exc.status === 401 || exc.status === 403) return signOut();
      replace(list, h("p.error", errText(exc)));
      return;
    }
    if (!rows.length) {
      replace(list, h("p.muted", "No matches match these filters."));
      return;
    }
    replace(list, h("table.list",
      h("thead", h("tr", h("th", "Match"), h("th", "Game"), h("th", "Status"), h("th", "Players"), h("th", "Ver."), h("th", "Started"))),
      h("tbody", rows.map((m) => h("tr", {
        class: m.id === selected ? "selected" : "", dataset: { match: m.id, status: m.status },
        on: { click: () => { selected = m.id; openMatch(detailBox, m.id); refreshList(); } },
      },
      h("td.mono", shortId(m.id)), h("td", gameName(m.game)), h("td", { class: `status-${m.status}` }, m.status),
      h("td.small", m.seats.map((s) => s.name + (s.bot ? "*" : "")).join(", ")),
      h("td", m.status === "running" ? "" : String(m.version ?? "")), h("td.small", fmtTime(m.created_at)))))),
    h("p.muted.small", "* bot"));
  }
  refreshList();
  every(4000, refreshList);
  if (selected) openMatch(detailBox, selected);
}

/** A match's options for people: scalars as "turn seconds 60", the special costs as "shield 1,
 * scout 2, …", and each seat's loadout on a line of its own under the seat's name. */
export function optionsText(options, name) {
  const plain = [];
  const blocks = [];
  for (const [key, value] of Object.entries(options)) {
    if (key === "loadouts" && Array.isArray(value)) {
      blocks.push(h("div.option-block#detail-loadouts", h("span.muted", "loadouts"),
        h("ul.loadouts", value.map((brought, seat) => h("li", { dataset: { seat } },
          h("span.swatch", { style: { background: seatColour(seat) } }), h("strong", name(seat)), ": ",
          Array.isArray(brought) && brought.length ? brought.map(words).join(", ") : "no specials")))));
    } else if (value && typeof value === "object" && !Array.isArray(value)) {
      blocks.push(h("div.option-block", { dataset: { option: key } }, h("span.muted", words(key)), " ",
        Object.entries(value).map(([k, v]) => `${words(k)} ${typeof v === "object" ? JSON.stringify(v) : v}`).join(", ")));
    } else if (Array.isArray(value)) {
      plain.push(`${words(key)} ${value.map((v) => (typeof v === "object" ? JSON.stringify(v) : words(v))).join(", ")}`);
    } else {
      plain.push(`${words(key)} ${words(value)}`);
    }
  }
  return [plain.length ? h("div", plain.join(" · ")) : null, ...blocks];
}

function gameName(id) {
  return games.find((g) => g.id === id)?.title || id;
}

// ------------------------------------------------------------------------------------ one match
async function openMatch(box, id) {
  if (detail) detail.stop();
  const mine = { stopped: false, stop() { this.stopped = true; clearInterval(this.timer); board?.destroy(); } };
  detail = mine;
  let board = null;
  replace(box, h("p.muted", "Loading…"));
  let info;
  try {
    info = await adminApi("GET", `/admin/matches/${id}`);
  } catch (exc) {
    replace(box, h("p.error", errText(exc)));
    return;
  }
  if (mine.stopped) return;
  // GET /matches/{id} reads the stored row: outcome and end time are current there
  const meta = { ...info.match, ...(await adminApi("GET", `/matches/${id}`).catch(() => ({}))) };
  const module = await gameModule(meta.game);
  await loadWording().catch((exc) => console.warn("no event wording", exc));
  const names = meta.seats.map((s) => s.name || `seat ${s.seat}`);
  const name = (seat) => names[seat] ?? `seat ${seat}`;

  const boardArea = h("div.board-area#admin-board");
  const panel = h("div.panel#admin-panel");
  const below = h("div#admin-below");
  const tabs = h("div.tabs");
  const head = h("div");
  replace(box, head, tabs, h("div.admin-board", boardArea, h("div.side", panel, below)));
  board = module.createBoard({
    board: boardArea, panel, seat: null, readOnly: true, admin: true, name,
    act: () => Promise.reject({ code: "not_a_player", message: "admins cannot act" }),
  });

  let tab = "state";
  let replayVersion = null;
  let lastVersion = meta.version ?? 0;
  let playing = null;

  function drawHead() {
    const outcome = meta.outcome;
    replace(head,
      h("div.detail-head", h("h2", `${gameName(meta.game)} · ${shortId(meta.id)}`),
        h("span#detail-status", { class: `status-${meta.status}` }, meta.status)),
      h("dl.kv",
        h("dt", "Seats"), h("dd", meta.seats.map((s, i) => h("span", { style: { marginRight: ".8rem" } },
          h("span.swatch", { style: { background: seatColour(i) } }), `${i}: ${s.name}${s.bot ? ` (${s.bot} bot)` : ""}`))),
        h("dt", "Options"), h("dd#detail-options", optionsText(meta.options || {}, name)),
        h("dt", "Started"), h("dd", fmtTime(meta.created_at) + (meta.ended_at ? ` · ended ${fmtTime(meta.ended_at)}` : "")),
        h("dt", "Seed hash"), h("dd.mono", meta.seed_hash),
        h("dt", "Seed"), h("dd.mono", info.seed || "—"),
        outcome ? [h("dt", "Outcome"), h("dd#detail-outcome", `${words(outcome.reason)} — ` + Object.entries(outcome.ranks || {})
          .sort((a, b) => a[1] - b[1]).map(([seat, rank]) => `${rank}. ${name(Number(seat))} (${outcome.scores?.[seat] ?? ""})`).join(", "))] : null),
      meta.status === "running" ? abortBox() : null);
    replace(tabs,
      h("button#tab-state", { type: "button", class: tab === "state" ? "on" : "", on: { click: () => show("state") } }, "Current state"),
      h("button#tab-replay", { type: "button", class: tab === "replay" ? "on" : "", on: { click: () => show("replay") } }, "Replay"),
      h("button#tab-log", { type: "button", class: tab === "log" ? "on" : "", on: { click: () => show("log") } }, "Action log"));
  }

  function abortBox() {
    const reason = h("input#abort-reason", { type: "text", value: "aborted by an admin", maxLength: 200 });
    const confirmRow = h("div.row", { hidden: true },
      reason,
      h("button#abort-confirm.primary", { type: "button", on: { click: async () => {
        try {
          const m = await adminApi("POST", `/admin/matches/${meta.id}/abort`, { reason: reason.value });
          Object.assign(meta, m);
          toast("Match aborted", "info");
          await reload();
        } catch (exc) {
          toast(errText(exc), "error");
        }
      } } }, "Confirm abort"),
      h("button", { type: "button", on: { click: () => { confirmRow.hidden = true; } } }, "cancel"));
    return h("div.abort-box",
      h("button#abort-match", { type: "button", on: { click: () => { confirmRow.hidden = false; reason.focus(); } } }, "Abort match…"),
      confirmRow);
  }

  async function reload() {
    try {
      info = await adminApi("GET", `/admin/matches/${id}`);
    } catch (exc) {
      toast(errText(exc), "error");
      return;
    }
    if (mine.stopped) return;
    Object.assign(meta, info.match, await adminApi("GET", `/matches/${id}`).catch(() => ({})));
    lastVersion = info.version;
    drawHead();
    if (tab === "state") drawState();
  }

  function drawState() {
    if (info.view && info.view.unavailable) {  // a match no engine here replays: the reason, no board
      replace(boardArea, h("div.panel.unavailable", h("p", info.view.unavailable.message)));
      replace(below, h("div.panel", h("h3", `Version ${info.version}`), h("p#admin-prompts", `match ${meta.status}`)));
      return;
    }
    board.update({ ...info, seat: null });
    const hidden = info.hidden_from ? Object.entries(info.hidden_from).map(([seat, tokens]) =>
      h("li", `${name(Number(seat))}: ${tokens.length} card${tokens.length === 1 ? "" : "s"} hidden`)) : [];
    const prompt = promptText(info.prompts || [], null, name);
    replace(below, h("div.panel",
      h("h3", `Version ${info.version}`),
      h("p#admin-prompts", meta.status === "running" ? (prompt.others || "no prompts") : `match ${meta.status}`),
      hidden.length ? [h("div.muted.small", "Hidden from each seat (drawn dashed on the board):"), h("ul.small", hidden)] : null));
  }

  async function drawReplay(version) {
    replayVersion = Math.max(0, Math.min(version, lastVersion));
    let step;
    try {
      step = await adminApi("GET", `/admin/matches/${id}/replay?version=${replayVersion}`);
    } catch (exc) {
      replace(below, h("p.error", errText(exc)));
      return;
    }
    if (mine.stopped || tab !== "replay") return;
    lastVersion = step.last_version;
    replayVersion = step.version;
    board.update({ view: step.view, prompts: [], status: "replay", seat: null, events: step.events, version: step.version });
    const slider = h("input#replay-slider", { type: "range", min: 0, max: lastVersion, value: replayVersion,
      on: { change: (e) => drawReplay(Number(e.target.value)) } });
    const action = step.action;
    const describe = module.describe;
    replace(below, h("div.panel",
      h("div.replay-bar",
        h("button#replay-first.small", { type: "button", title: "the deal", on: { click: () => drawReplay(0) } }, "« first"),
        h("button#replay-prev.small", { type: "button", title: "previous action", on: { click: () => drawReplay(replayVersion - 1) } }, "‹ prev"),
        h("button#replay-play.small", { type: "button", on: { click: togglePlay } }, playing ? "pause" : "play"),
        h("button#replay-next.small", { type: "button", title: "next action", on: { click: () => drawReplay(replayVersion + 1) } }, "next ›"),
        h("button#replay-last.small", { type: "button", title: "the last action", on: { click: () => drawReplay(lastVersion) } }, "last »")),
      slider,
      h("h3#replay-version", `Version ${replayVersion} of ${lastVersion}`),
      action ? [h("div.small", `${action.kind === "deadline" ? "deadline default" : action.kind} by `,
        action.seat === null || action.seat === undefined ? "the server" : h("strong", name(action.seat)), ` at ${fmtTime(action.created_at)}`),
      h("pre.action#replay-action", JSON.stringify(action.action, null, 1))] : h("p.muted", "The deal: no action yet."),
      step.events.length ? [h("div.muted.small", "Events of this step (every audience's copy):"),
        h("ol.log#replay-events", step.events.map((ev) => {
          // words from /events.json (as the play page and the CLI), detail from the game's module
          const w = describeEvent(meta.game, ev, name) || { text: words(ev.type), kind: "minor", seat: null };
          const d = describe ? describe(ev, name) : null;
          return h("li", { class: `log-${w.kind || "normal"}` }, h("span.log-bar", { style: { background: seatColour(w.seat) } }),
            d?.detail ? h("details", h("summary", w.known || !d.text ? w.text : d.text), d.detail)
              : h("span", w.known || !d?.text ? w.text : d.text));
        }))] : null));
  }

  function togglePlay() {
    if (playing) {
      clearInterval(playing);
      playing = null;
      drawReplay(replayVersion);
      return;
    }
    playing = setInterval(() => {
      if (mine.stopped || tab !== "replay" || replayVersion >= lastVersion) {
        clearInterval(playing);
        playing = null;
        if (!mine.stopped && tab === "replay") drawReplay(replayVersion);
        return;
      }
      drawReplay(replayVersion + 1);
    }, 700);
    drawReplay(replayVersion);
  }

  async function drawLog() {
    let out;
    try {
      out = await adminApi("GET", `/admin/matches/${id}/log`);
    } catch (exc) {
      replace(below, h("p.error", errText(exc)));
      return;
    }
    if (mine.stopped || tab !== "log") return;
    replace(below, h("div.panel.log-panel",
      h("h3", `${out.actions.length} actions`),
      h("table.list.small#action-log",
        h("thead", h("tr", h("th", "#"), h("th", "Seat"), h("th", "Action"))),
        h("tbody", out.actions.map((a) => h("tr", {
          title: "open this step in the replay", style: { cursor: "pointer" },
          on: { click: () => { show("replay", a.seq); } },
        },
        h("td", String(a.seq)), h("td", a.seat === null ? "—" : name(a.seat)),
        h("td.mono", `${a.kind === "deadline" ? "⏰ " : ""}${JSON.stringify(a.action).slice(0, 90)}`)))))));
  }

  function show(which, version) {
    tab = which;
    if (playing) { clearInterval(playing); playing = null; }
    drawHead();
    if (which === "state") { drawState(); reload(); }
    else if (which === "replay") drawReplay(version ?? replayVersion ?? lastVersion);
    else drawLog();
  }

  drawHead();
  drawState();
  mine.timer = setInterval(() => {
    if (!mine.stopped && tab === "state" && meta.status === "running") reload();
  }, 2000);
}

// ------------------------------------------------------------------------------------ start
if (token) {
  adminApi("GET", "/admin/matches?limit=1").then(console_, () => login());
} else {
  login();
}
