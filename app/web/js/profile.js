// #/player/<id>: a player's public profile: ratings by game (the display rating, exact values in
// its title, provisional marked), wins, recent rated matches, and the one-line explanation.
import { api, ApiError } from "./api.js";
import { h, replace, fmtTime, ordinal } from "./dom.js";
import { games, gameTitle } from "./lobby.js";

function errorText(exc) {
  return exc instanceof ApiError ? `${exc.message} (${exc.code})` : String(exc?.message || exc);
}

const fmt = (x) => (Math.round(x * 100) / 100).toFixed(2);

export async function renderProfile(root, playerId, { stillHere }) {
  await games().catch(() => null);
  let p;
  try {
    p = await api("GET", `/players/${encodeURIComponent(playerId)}`);
  } catch (exc) {
    replace(root, h("section.card-panel", h("p.error", errorText(exc))));
    return;
  }
  if (!stillHere()) return;
  const ratings = Object.entries(p.ratings);
  replace(root, h("section.card-panel.wide.profile#profile", { dataset: { player: p.player.id } },
    h("h2#profile-name", p.player.name, p.username ? h("span.muted", ` @${p.username}`) : null),
    h("p.muted", `Playing since ${fmtTime(p.created_at)}`),
    h("h3", "Ratings"),
    ratings.length
      ? h("table.list#profile-ratings",
        h("thead", h("tr", h("th", "Game"), h("th", "Rating"), h("th", "Matches"), h("th", "Wins"))),
        h("tbody", ratings.map(([game, r]) => h("tr", { dataset: { game } },
          h("td", h("a", { href: `#/leaderboard/${game}` }, gameTitle(game))),
          h("td.rating.rating-display", { title: `μ ${fmt(r.mu)}, σ ${fmt(r.sigma)}, ordinal ${fmt(r.ordinal)}` },
            String(r.display), r.provisional ? h("span.provisional", " (provisional)") : null),
          h("td", String(r.matches)), h("td.wins", String(r.wins))))))
      : h("p.muted", "No rated matches yet."),
    h("p.muted.small.rating-note#rating-note", p.explanation),
    h("h3", "Recent matches"),
    p.recent_matches.length
      ? h("table.list#profile-matches",
        h("thead", h("tr", h("th", "Game"), h("th", "Place"), h("th", "Rating"), h("th", "Ended"), h("th", ""))),
        h("tbody", p.recent_matches.map((m) => h("tr", { dataset: { match: m.match_id } },
          h("td", gameTitle(m.game)), h("td", `${ordinal(m.rank)} of ${m.seats}`),
          h("td", { title: m.weight < 1 ? `counted ${Math.round(m.weight * 100)} %: a repeat game against the same player` : "" },
            `${m.display_before} → ${m.display_after}`, m.weight < 1 ? h("span.muted", ` (×${fmt(m.weight)})`) : null),
          h("td", fmtTime(m.ended_at)),
          h("td", h("a.button.small", { href: `#/match/${m.match_id}` }, "View"))))))
      : h("p.muted", "None yet.")));
}
