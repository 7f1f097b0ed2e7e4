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
import { renderJoin, renderParty } from "./party.js";

const root = document.getElementById("app");
const who = document.getElementById("who");
let cleanup = null;
let generation = 0;

function showWho() {
  const me = savedPlayer();
  const guest = me && !me.username;
  replace(who, me ? [h("a#nav-leaderboard.button.small", { href: "#/leaderboard" }, "Leaderboard"),
    h("a#nav-inventory.button.small", { href: "#/inventory" }, "Specials & slot machine"),
    // a guest lives in this browser only: the way to keep it is in sight, not behind its name
    guest ? h("a#nav-keep.button.small.primary", { href: "#/account", title: "Choose a username and password to keep this player and play it on other devices" }, "Keep this player") : null,
    h("span.who-name", "Playing as ", h("a#me-name", { href: "#/account" }, h("strong", me.player.name))),
    h("button#sign-out.small.link", { type: "button", on: { click: signOut } }, "sign out")] : null);
}

function leave() {
  savePlayer(null);
  location.hash = "#/";
  route();
}

/** Sign out. A guest is asked first: its player (name, crystals, specials, ratings) lives only in
 * this browser's token, so signing out throws it away unless it was kept (claimed) first. */
async function signOut() {
  const me = savedPlayer();
  if (!me) return;
  if (me.username) {
    leave();
    return;
  }
  let loses = "its name, its crystals and specials, and its ratings";
  try {
    const inv = await api("GET", "/players/me/inventory");
    const specials = inv.specials.length;
    loses = `its name (${me.player.name}), its ${inv.crystals} crystal${inv.crystals === 1 ? "" : "s"}, `
      + `${specials ? `its ${specials} special${specials === 1 ? "" : "s"}` : "its specials"} and its ratings`;
  } catch { /* the general words */ }
  document.getElementById("sign-out-dialog")?.remove();
  const dialog = h("dialog#sign-out-dialog.card-panel",
    h("h2", "Sign out of a guest player?"),
    h("p#sign-out-warning", `You play as a guest: this player lives in this browser only. Signing out throws it away for good — ${loses} — and nobody can bring it back.`),
    h("p.muted", "To keep it, choose a username and password first (Keep this player); then you can sign out and sign in again on any device."),
    h("div.row",
      h("a#sign-out-keep.button.primary", { href: "#/account", on: { click: () => dialog.close() } }, "Keep this player"),
      h("button#sign-out-anyway.danger", { type: "button", on: { click: () => { dialog.close(); leave(); } } }, "Sign out and lose it"),
      h("button#sign-out-cancel", { type: "button", on: { click: () => dialog.close() } }, "Cancel")));
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
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
  } else if (page === "party" && id) {
    cleanup = renderParty(root, id, { stillHere });
  } else if (page === "join" && id) {
    await renderJoin(root, decodeURIComponent(id), { stillHere });
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
window.addEventListener("bannerfall:player", showWho);  // claimed or signed in: the top bar changes
// a token this server no longer knows (e.g. a fresh database): start again as a new guest
if (savedPlayer()) {
  // who this is, and whether it is a guest (no username: the top bar offers to keep it)
  api("GET", "/accounts/me").then((account) => {
    const me = savedPlayer();
    if (me) savePlayer({ ...me, player: account.player, username: account.username || undefined });
    route();
  }, (exc) => {
    if (exc.status === 401) savePlayer(null);
    route();
  });
} else {
  route();
}
