// The play client: a hash router over the welcome, home, lobby and match pages.
import { savedPlayer, savePlayer, api } from "./api.js";
import { h, replace } from "./dom.js";
import { renderHome, renderLobby, renderWelcome } from "./lobby.js";
import { renderMatch } from "./match.js";
import { renderInventory } from "./inventory.js";
import { renderAccount, signInPanel } from "./account.js";
import { renderLeaderboard } from "./leaderboard.js";
import { renderProfile } from "./profile.js";
import { quickPlayPanel, renderQueue } from "./quickplay.js";

const root = document.getElementById("app");
const who = document.getElementById("who");
let cleanup = null;
let generation = 0;

function showWho() {
  const me = savedPlayer();
  replace(who, me ? [h("a#nav-leaderboard.button.small", { href: "#/leaderboard" }, "Leaderboard"),
    h("a#nav-inventory.button.small", { href: "#/inventory" }, "Specials & slot machine"),
    h("span", "Playing as ", h("a#me-name", { href: "#/account" }, h("strong", me.player.name))),
    h("button.small.link", { type: "button", on: { click: () => { savePlayer(null); location.hash = "#/"; route(); } } }, "sign out")] : null);
}

async function route() {
  generation += 1;
  const mine = generation;
  const stillHere = () => mine === generation;
  if (cleanup) {
    try { cleanup(); } catch { /* ignore */ }
    cleanup = null;
  }
  showWho();
  const me = savedPlayer();
  if (!me) {
    renderWelcome(root, route);
    root.append(signInPanel(route));
    return;
  }
  const [, page, id] = (location.hash || "#/").replace(/^#/, "").split("/");
  document.body.dataset.page = page || "home";
  if (page === "lobby" && id) {
    await renderLobby(root, id, { stillHere });
  } else if (page === "account") {
    await renderAccount(root, { stillHere });
  } else if (page === "leaderboard") {
    await renderLeaderboard(root, id, { stillHere });
  } else if (page === "player" && id) {
    await renderProfile(root, id, { stillHere });
  } else if (page === "queue" && id) {
    cleanup = renderQueue(root, id, { stillHere });
  } else if (page === "inventory") {
    await renderInventory(root, { stillHere });
  } else if (page === "match" && id) {
    const stop = await renderMatch(root, id, { stillHere });
    if (stillHere()) cleanup = stop;
    else stop();
  } else {
    await renderHome(root, { stillHere });
    const panel = await quickPlayPanel();
    if (stillHere()) root.querySelector(".home")?.prepend(panel);
  }
}

window.addEventListener("hashchange", route);
// a token this server no longer knows (e.g. a fresh database): start again as a new guest
if (savedPlayer()) {
  api("GET", "/players/me").then(route, (exc) => {
    if (exc.status === 401) savePlayer(null);
    route();
  });
} else {
  route();
}
