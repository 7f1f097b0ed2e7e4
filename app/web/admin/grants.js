// Admin console: grant crystals (or a special) to a player, audited with a reason (conquest.md 5:
// buying crystals is outside the server), and look at that player's inventory and ledger.
import { ApiError } from "../js/api.js";
import { h, replace, fmtTime, words } from "../js/dom.js";

const errText = (exc) => (exc instanceof ApiError ? `${exc.message} (${exc.code})` : String(exc?.message || exc));

/** The "Players: crystals and specials" panel; ``adminApi(method, path, body)`` calls as the admin. */
export function grantsPanel(adminApi, specials) {
  const playerId = h("input#grant-player", { type: "text", placeholder: "player id (shown on their inventory page)", maxLength: 32 });
  const amount = h("input#grant-amount", { type: "number", value: 100, step: 1 });
  const special = h("select#grant-special", h("option", { value: "" }, "crystals"),
    specials.map((s) => h("option", { value: s }, words(s))));
  const reason = h("input#grant-reason", { type: "text", placeholder: "reason (kept in the ledger)", maxLength: 200 });
  const out = h("div#grant-result");

  async function show(id) {
    const [inv, rows] = await Promise.all([adminApi("GET", `/admin/players/${id}/inventory`),
      adminApi("GET", `/admin/players/${id}/ledger?limit=10`).then((page) => page.items)]);
    replace(out,
      h("p", "Crystals: ", h("strong#grant-balance", String(inv.crystals)), " · specials: ",
        inv.specials.map((s) => `${words(s.id)} (${s.matches_left})`).join(", ") || "none"),
      h("table.list.small", h("tbody", rows.map((r) => h("tr", { dataset: { kind: r.kind } },
        h("td", fmtTime(r.created_at)), h("td", words(r.kind)), h("td", words(r.asset)),
        h("td", r.delta > 0 ? `+${r.delta}` : String(r.delta)), h("td", r.reason || ""))))));
  }

  return h("section.card-panel#grants",
    h("h2", "Players: crystals and specials"),
    h("form", { on: { submit: async (e) => {
      e.preventDefault();
      const id = playerId.value.trim();
      try {
        if (special.value) {
          await adminApi("POST", `/admin/players/${id}/specials`, { special: special.value, matches: Number(amount.value), reason: reason.value });
        } else {
          await adminApi("POST", `/admin/players/${id}/crystals`, { amount: Number(amount.value), reason: reason.value });
        }
        await show(id);
      } catch (exc) {
        replace(out, h("p.error", errText(exc)));
      }
    } } },
    h("div.filters", h("label", "Player ", playerId)),
    h("div.filters", h("label", "Grant ", amount), special, h("label", "Reason ", reason),
      h("button#grant-go.primary", { type: "submit" }, "Grant"),
      h("button.small", { type: "button", on: { click: () => show(playerId.value.trim()).catch((exc) => replace(out, h("p.error", errText(exc)))) } }, "look up"))),
    h("p.muted.small", "Crystals: a negative amount takes them back (never below 0). Specials: 1–10 matches."),
    out);
}
