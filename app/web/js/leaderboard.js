// #/leaderboard/<game>: players by rating, paged with the server's cursor, with this player's own
// rank. The number shown is the display rating (1000 + 40 × ordinal, never below 0); the exact
// mu, sigma and ordinal are in the cell's title. Provisional ratings are not listed; one line
// from the server says what the number is.
import { api, ApiError, savedPlayer } from "./api.js";
import { h, replace } from "./dom.js";
import { games, gameTitle } from "./lobby.js";

function errorText(exc) {
  return exc instanceof ApiError ? `${exc.message} (${exc.code})` : String(exc?.message || exc);
}

const fmt = (x) => (Math.round(x * 100) / 100).toFixed(2);
const exact = (r) => `μ ${fmt(r.mu)}, σ ${fmt(r.sigma)}, ordinal μ − 3σ = ${fmt(r.ordinal)}`;

export async function renderLeaderboard(root, gameId, { stillHere }) {
  const me = savedPlayer();
  let all = [];
  try {
    all = await games();
  } catch (exc) {
    replace(root, h("p.error", errorText(exc)));
    return;
  }
  const game = gameId || all[0]?.id;
  const tabs = h("nav.tabs#leaderboard-games", all.map((g) => h("a.button.small", {
    href: `#/leaderboard/${g.id}`, class: g.id === game ? "primary" : "",
  }, g.title)));
  const mine = h("p#my-rank.muted");
  const body = h("tbody");
  const more = h("button#leaderboard-more.small", { type: "button", hidden: true }, "More");
  const note = h("p.muted.small.rating-note#rating-note");
  replace(root, h("section.card-panel.wide.leaderboard#leaderboard", { dataset: { game } },
    h("h2", `Leaderboard — ${gameTitle(game)}`), tabs, mine,
    h("table.list", h("thead", h("tr", h("th", "#"), h("th", "Player"), h("th", "Rating"), h("th", "Matches"), h("th", "Wins"))), body),
    more, note));
  let cursor = null;
  async function load() {
    let page;
    try {
      const q = new URLSearchParams({ limit: "50" });
      if (cursor) q.set("cursor", cursor);
      page = await api("GET", `/games/${encodeURIComponent(game)}/leaderboard?${q}`);
    } catch (exc) {
      replace(mine, h("span.error", errorText(exc)));
      return;
    }
    if (!stillHere()) return;
    note.textContent = page.explanation;
    const r = page.me?.rating;
    if (page.me && page.me.rank !== null) replace(mine, `Your rank: ${page.me.rank} (rating ${r.display})`);
    else if (page.me) {
      replace(mine, h("span.provisional", `Your rating ${r.display} is provisional: ${Number(r.weighted_matches.toFixed(2))} of `
        + `${page.provisional_matches} rated matches counted (repeat games against the same player count less).`));
    } else replace(mine, "You have no rating in this game yet: finish a rated match (quick play, accounts only).");
    for (const row of page.items) {
      body.append(h("tr", { dataset: { player: row.player.id }, class: row.player.id === me.player.id ? "selected" : "" },
        h("td.rank", String(row.rank)),
        h("td", h("a", { href: `#/player/${row.player.id}` }, row.player.name), row.username ? h("span.muted", ` @${row.username}`) : null),
        h("td.rating.rating-display", { title: exact(row.rating) }, String(row.rating.display)),
        h("td", String(row.rating.matches)), h("td", String(row.rating.wins))));
    }
    if (!body.children.length) body.append(h("tr", h("td", { colSpan: 5 }, h("span.muted", "Nobody is rated in this game yet."))));
    cursor = page.next_cursor;
    more.hidden = !cursor;
  }
  more.addEventListener("click", load);
  await load();
}
