// Home (guest sign-in, games, open lobbies, matches) and the lobby room.
import { api, ApiError, savedPlayer, savePlayer } from "./api.js";
import { h, replace, shortId, words, toast, fmtTime } from "./dom.js";
import { loadoutPicker, symbolOf } from "./inventory.js";

let gamesCache = null;
// options the server fills at match start (conquest.md 5); a lobby may not set them
const SERVER_FILLED = new Set(["loadouts", "special_costs"]);

export async function games() {
  if (!gamesCache) gamesCache = await api("GET", "/games", undefined, null);
  return gamesCache;
}

export function gameTitle(id) {
  return gamesCache?.find((g) => g.id === id)?.title || id;
}

function errorText(exc) {
  return exc instanceof ApiError ? `${exc.message} (${exc.code})` : String(exc?.message || exc);
}

// ------------------------------------------------------------------------------------ guest
export function renderWelcome(root, onDone) {
  const input = h("input#guest-name", { type: "text", maxLength: 32, placeholder: "your name", autocomplete: "nickname", required: true });
  const error = h("p.error");
  const form = h("form.card-panel.welcome", {
    on: {
      submit: async (e) => {
        e.preventDefault();
        const name = input.value.trim() || "guest";
        try {
          const out = await api("POST", "/players", { name }, null);
          savePlayer({ token: out.token, player: out.player });
          onDone();
        } catch (exc) {
          error.textContent = errorText(exc);
        }
      },
    },
  },
  h("h1", "Bannerfall"),
  h("p.lead", "Card games of territory, played against people and bots. The server deals, rolls and judges every battle — nobody sees a hidden card."),
  h("label", "Name ", input),
  h("button#guest-go.primary", { type: "submit" }, "Play as guest"),
  error,
  h("p.muted.small", "A guest token is kept in this browser only."));
  replace(root, form);
  input.focus();
}

// ------------------------------------------------------------------------------------ home
export async function renderHome(root, { stillHere }) {
  const me = savedPlayer();
  const list = h("div#lobby-list");
  const matchList = h("div#match-list");
  const createBox = h("div");
  replace(root,
    h("div.home",
      h("section.card-panel", h("h2", "New lobby"), createBox),
      h("section.card-panel", h("h2", "Open lobbies"), list),
      h("section.card-panel.wide", h("h2", "Matches"), matchList)));

  let all;
  try {
    all = await games();
  } catch (exc) {
    replace(createBox, h("p.error", errorText(exc)));
    return;
  }
  replace(createBox, createForm(all));

  // lists are paged by the server ({items, next_cursor}); "More lobbies" shows one more page
  let lobbyPages = 1;
  const moreLobbies = h("button#more-lobbies.small", { type: "button", hidden: true,
    on: { click: () => { lobbyPages += 1; refresh(false); } } }, "More lobbies");
  list.after(moreLobbies);

  async function openLobbies() {
    let items = [];
    let cursor = null;
    for (let i = 0; i < lobbyPages; i += 1) {
      const page = await api("GET", `/lobbies?status=open${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      items = items.concat(page.items);
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    return { items, more: Boolean(cursor) };
  }

  async function refresh(again = true) {
    if (!stillHere()) return;
    try {
      const [lobbies, running, finished] = await Promise.all([
        openLobbies(),
        api("GET", "/matches?status=running&limit=50"),
        api("GET", "/matches?status=finished&limit=10"),
      ]);
      if (!stillHere()) return;
      renderLobbies(list, lobbies.items, me);
      moreLobbies.hidden = !lobbies.more;
      renderMatches(matchList, [...running.items, ...finished.items], me);
    } catch (exc) {
      if (exc.status === 401) {
        savePlayer(null);
        location.hash = "#/";
        location.reload();
        return;
      }
      replace(list, h("p.error", errorText(exc)));
    }
    if (again && stillHere()) setTimeout(refresh, 3000);
  }
  refresh();
}

function createForm(all) {
  const gameSel = h("select#new-game", all.map((g) => h("option", { value: g.id }, g.title)));
  const seats = h("input#new-seats", { type: "number", value: 3 });
  const optionsBox = h("div.options");
  const error = h("p.error");

  function showOptions() {
    const game = all.find((g) => g.id === gameSel.value);
    seats.min = game.min_seats;
    seats.max = game.max_seats;
    const v = Number(seats.value);
    if (!(v >= game.min_seats && v <= game.max_seats)) seats.value = Math.min(Math.max(v || 3, game.min_seats), game.max_seats);
    const props = game.options_schema?.properties || {};
    // readOnly options are filled by the server at match start (e.g. Conquest's loadouts): not a form field
    replace(optionsBox, Object.entries(props).filter(([key, schema]) => !schema.readOnly && !SERVER_FILLED.has(key)).map(([key, schema]) => {
      const id = `opt-${key}`;
      let input;
      if (schema.enum) {
        input = h(`select#${id}`, { dataset: { option: key } },
          schema.enum.map((v) => h("option", { value: v, selected: v === schema.default }, words(v))));
      } else if (schema.type === "boolean") {
        input = h(`input#${id}`, { type: "checkbox", checked: !!schema.default, dataset: { option: key, kind: "boolean" } });
      } else if (schema.type === "integer" || schema.type === "number") {
        input = h(`input#${id}`, { type: "number", value: schema.default ?? "", min: schema.minimum, max: schema.maximum,
          step: schema.type === "integer" ? 1 : "any", dataset: { option: key, kind: "number" } });
      } else {
        input = h(`input#${id}`, { type: "text", value: schema.default ?? "", dataset: { option: key } });
      }
      return h("label.option", { title: schema.description || "" }, h("span", words(schema.title || key)), input);
    }));
  }
  gameSel.addEventListener("change", showOptions);
  showOptions();

  return h("form", {
    on: {
      submit: async (e) => {
        e.preventDefault();
        error.textContent = "";
        const options = {};
        for (const input of optionsBox.querySelectorAll("[data-option]")) {
          const key = input.dataset.option;
          if (input.dataset.kind === "boolean") options[key] = input.checked;
          else if (input.dataset.kind === "number") { if (input.value !== "") options[key] = Number(input.value); }
          else options[key] = input.value;
        }
        try {
          const lobby = await api("POST", "/lobbies", { game: gameSel.value, seats: Number(seats.value), options });
          location.hash = `#/lobby/${lobby.id}`;
        } catch (exc) {
          error.textContent = errorText(exc);
        }
      },
    },
  },
  h("label.option", h("span", "Game"), gameSel),
  h("label.option", h("span", "Seats"), seats),
  optionsBox,
  h("button#create-lobby.primary", { type: "submit" }, "Create lobby"),
  error);
}

// Who a seat's player is beyond its display name, which anyone may choose (two players may share
// one): an account holder's @username, or a "guest" mark (docs/protocol.md, "Lobbies").
function seatMark(seat) {
  if (seat.username) return h("span.muted.seat-username", ` @${seat.username}`);
  return seat.player && seat.player.role === "player" && !seat.bot
    ? h("span.tag.guest", { title: "a guest: no account, anyone may take this name" }, "guest") : null;
}

function seatsFilled(lobby) {
  return lobby.seats.filter((s) => s.player).length;
}

function renderLobbies(list, lobbies, me) {
  if (!lobbies.length) {
    replace(list, h("p.muted", "No open lobbies. Create one — you can fill the other seats with bots."));
    return;
  }
  replace(list, h("table.list",
    h("thead", h("tr", h("th", "Game"), h("th", "Host"), h("th", "Seats"), h("th", ""))),
    h("tbody", lobbies.map((l) => {
      const hostSeat = l.seats.find((s) => s.player?.id === l.host_id);
      const host = hostSeat ? [hostSeat.player.name, seatMark(hostSeat)] : "?";
      const seated = l.seats.some((s) => s.player?.id === me.player.id);
      return h("tr", { dataset: { lobby: l.id } },
        h("td", gameTitle(l.game)), h("td", host), h("td", `${seatsFilled(l)}/${l.seat_count}`),
        h("td", seated
          ? h("a.button", { href: `#/lobby/${l.id}` }, "Open")
          : seatsFilled(l) >= l.seat_count
            ? h("button", { type: "button", disabled: true, title: "every seat is taken" }, "Full")
            : h("button.join", { type: "button", on: { click: () => join(l.id) } }, "Join")));
    }))));
}

async function join(id) {
  try {
    await api("POST", `/lobbies/${id}/join`, {});
    location.hash = `#/lobby/${id}`;
  } catch (exc) {
    toast(errorText(exc), "error");
  }
}

function renderMatches(box, matches, me) {
  if (!matches.length) {
    replace(box, h("p.muted", "No matches yet."));
    return;
  }
  replace(box, h("table.list",
    h("thead", h("tr", h("th", "Game"), h("th", "Players"), h("th", "Status"), h("th", "Started"), h("th", ""))),
    h("tbody", matches.map((m) => {
      const mine = m.seats.some((s) => s.player_id === me.player.id);
      const label = m.status === "running" ? (mine ? "Play" : "Watch") : "View";
      return h("tr", { dataset: { match: m.id } },
        h("td", gameTitle(m.game)), h("td", m.seats.map((s) => s.name).join(", ")),
        h("td", words(m.status)), h("td", fmtTime(m.created_at)),
        h("td", h("a.button", { href: `#/match/${m.id}`, class: mine && m.status === "running" ? "primary" : "" }, label)));
    }))));
}

// ------------------------------------------------------------------------------------ lobby room
export async function renderLobby(root, id, { stillHere }) {
  const me = savedPlayer();
  const box = h("section.card-panel.lobby-room");
  replace(root, box);
  await games().catch(() => null);
  let busy = false;
  let owned = null; // Conquest: the specials I own, for the loadout picker (fetched once)

  async function call(method, path, body) {
    busy = true;
    try {
      return await api(method, path, body);
    } catch (exc) {
      toast(errorText(exc), "error");
      return null;
    } finally {
      busy = false;
    }
  }

  async function refresh() {
    if (!stillHere()) return;
    let lobby;
    try {
      lobby = await api("GET", `/lobbies/${id}`);
    } catch (exc) {
      replace(box, h("p.error", errorText(exc)), h("a.button", { href: "#/" }, "Back"));
      return;
    }
    if (!stillHere()) return;
    if (lobby.status === "started" && lobby.match_id) {
      location.hash = `#/match/${lobby.match_id}`;
      return;
    }
    if (lobby.game === "conquest" && owned === null) {
      owned = (await api("GET", "/players/me/inventory").catch(() => ({ specials: [] }))).specials;
      if (!stillHere()) return;
    }
    draw(lobby);
    setTimeout(refresh, 1000);
  }

  function draw(lobby) {
    const isHost = lobby.host_id === me.player.id;
    const seated = lobby.seats.some((s) => s.player?.id === me.player.id);
    const full = lobby.seats.every((s) => s.player);
    const game = gamesCache?.find((g) => g.id === lobby.game);
    const kinds = game?.bot_kinds?.length ? game.bot_kinds : ["random"];
    const kindSel = h("select#bot-kind", kinds.map((k) => h("option", { value: k }, `${k} bot`)));
    const options = Object.entries(lobby.options || {}).filter(([k]) => !SERVER_FILLED.has(k)).map(([k, v]) => `${words(k)}: ${words(v)}`).join(" · ");
    replace(box,
      h("h2", `${gameTitle(lobby.game)} lobby`),
      h("p.muted", options),
      h("ol.seats", lobby.seats.map((s) => h("li", { dataset: { seat: s.seat } },
        s.player ? [h("strong", s.player.name), seatMark(s), s.bot ? h("span.tag", `${s.bot} bot`) : null,
          s.player.id === lobby.host_id ? h("span.tag", "host") : null, s.player.id === me.player.id ? h("span.tag.you", "you") : null,
          s.loadout?.length ? h("span.seat-loadout", s.loadout.map((x) => h("span.tag.special", { title: words(x), dataset: { special: x } }, `${symbolOf(x)} ${words(x)}`))) : null]
          : h("span.muted", "empty seat")))),
      lobby.game === "conquest" && lobby.status === "open" && seated
        ? loadoutPicker(id, owned || [], lobby.seats.find((s) => s.player?.id === me.player.id)?.loadout, draw) : null,
      lobby.status !== "open" ? h("p.error", `This lobby is ${lobby.status}.`) : null,
      lobby.status === "open" && isHost ? h("div.row",
        kindSel,
        h("button#add-bots", { type: "button", disabled: full, on: { click: async () => {
          if (!busy && await call("POST", `/lobbies/${id}/bots`, { kind: kindSel.value })) refresh();
        } } }, "Fill empty seats with bots"),
        h("button#start-match.primary", { type: "button", disabled: !full, title: full ? "" : "every seat needs a player or a bot",
          on: { click: async () => {
            const out = !busy && await call("POST", `/lobbies/${id}/start`);
            if (out?.match_id) location.hash = `#/match/${out.match_id}`;
          } } }, "Start match")) : null,
      lobby.status === "open" && !isHost && seated ? h("p.muted", "Waiting for the host to start the match…") : null,
      lobby.status === "open" && !seated ? h("button.primary", { type: "button", on: { click: () => join(id) } }, "Join") : null,
      h("div.row",
        h("a.button", { href: "#/" }, "Back"),
        lobby.status === "open" && seated ? h("button#leave-lobby", { type: "button", on: { click: async () => {
          if (await call("POST", `/lobbies/${id}/leave`)) location.hash = "#/";
        } } }, isHost ? "Close lobby" : "Leave") : null),
      h("p.muted.small", `lobby ${shortId(lobby.id)} · share this page's address so others can join`));
  }
  refresh();
}
