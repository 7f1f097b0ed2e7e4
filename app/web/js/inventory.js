// The meta-game of Hold'em Conquest (conquest.md 5): crystals, owned specials, the three-reel slot
// machine (a spin you can watch: the reels run until the server's answer, then stop one by one on
// its symbols), the spin's proof (seed hash before, seed after) and the ledger. Also the loadout
// picker used by the lobby room.
import { api, ApiError, savedPlayer } from "./api.js";
import { h, replace, words, fmtTime, toast } from "./dom.js";

// a short badge per symbol (plain letters: headless and minimal browsers often lack emoji fonts)
const SYMBOL = {
  blank: "—", shield: "SH", scout: "SC", loyalty: "LY", spy: "SP", corruption: "CO", big_brother: "BB",
  read_hand: "RH", hound: "HO", joker: "JK", double_hand: "2H", double_set: "2S", double_income: "2I",
  full_double_income: "FI", insurance: "IN", free_fold: "FF",
};

export function symbolOf(id) {
  return SYMBOL[id] || "?";
}

function errorText(exc) {
  return exc instanceof ApiError ? `${exc.message} (${exc.code})` : String(exc?.message || exc);
}

function reel(i) {
  return h(`div.reel#reel-${i}`, { dataset: { symbol: "blank" } },
    h("span.reel-symbol", symbolOf("blank")), h("span.reel-name", "blank"));
}

function setReel(node, symbol) {
  node.dataset.symbol = symbol;
  node.querySelector(".reel-symbol").textContent = symbolOf(symbol);
  node.querySelector(".reel-name").textContent = words(symbol);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export async function renderInventory(root, { stillHere }) {
  const crystals = h("strong#crystals", "…");
  const owned = h("div#owned-specials");
  const reels = [0, 1, 2].map(reel);
  const machine = h("div#slot-machine.slot", { dataset: { state: "idle" } }, reels);
  const price = h("span#spin-price", "…");
  const commitment = h("code#next-seed-hash.hash", "…");
  const clientSeed = h("input#client-seed", { type: "text", maxLength: 64, placeholder: "optional: your own words, mixed into the reels" });
  const result = h("p#spin-result", { "aria-live": "polite" });
  const proof = h("div#spin-proof.small.muted");
  const ledger = h("div#ledger");
  const spinButton = h("button#spin.primary", { type: "button" }, "Spin");
  let strip = ["blank"];

  replace(root, h("div.home.inventory",
    h("section.card-panel",
      h("h2", "Your inventory"),
      h("p", "Crystals: ", crystals),
      h("p.muted.small", "Crystals are granted by an admin (tell them your player id: ", h("code#my-player-id", savedPlayer()?.player?.id || ""),
        "). Specials last a number of finished Conquest matches you bring them to."),
      owned),
    h("section.card-panel",
      h("h2", "Get your special ability"),
      machine,
      h("p", "A spin costs ", price, " crystals. Two or three reels showing the same special win it."),
      h("label.option", h("span", "Client seed"), clientSeed),
      h("div.row", spinButton),
      result,
      h("p.small.muted", "Next spin's seed, committed before you spin (sha256): ", commitment),
      proof),
    h("section.card-panel.wide", h("h2", "Ledger"), ledger)));

  async function load() {
    const [inv, rows] = await Promise.all([api("GET", "/players/me/inventory"), api("GET", "/players/me/ledger?limit=30").then((page) => page.items)]);
    if (!stillHere()) return;
    crystals.textContent = String(inv.crystals);
    price.textContent = String(inv.spin.price);
    commitment.textContent = inv.spin.next_seed_hash;
    strip = inv.spin.strip;
    spinButton.disabled = inv.crystals < inv.spin.price;
    spinButton.title = spinButton.disabled ? "not enough crystals" : "";
    replace(owned, inv.specials.length
      ? h("table.list", h("thead", h("tr", h("th", ""), h("th", "Special"), h("th", "Matches left"), h("th", "Cost"), h("th", "Effect"))),
        h("tbody", inv.specials.map((s) => h("tr", { dataset: { special: s.id } },
          h("td", symbolOf(s.id)), h("td", words(s.id)), h("td.matches-left", String(s.matches_left)),
          h("td", `${s.cost} mana`), h("td.small", s.description)))))
      : h("p.muted#no-specials", "No specials yet: spin the slot machine."));
    replace(ledger, rows.length
      ? h("table.list", h("thead", h("tr", h("th", "When"), h("th", "What"), h("th", "Asset"), h("th", "Change"), h("th", "After"), h("th", "Note"))),
        h("tbody", rows.map((r) => h("tr", { dataset: { kind: r.kind } },
          h("td", fmtTime(r.created_at)), h("td", words(r.kind)), h("td", words(r.asset)),
          h("td", r.delta > 0 ? `+${r.delta}` : String(r.delta)), h("td", String(r.balance_after)),
          h("td.small", r.reason || (r.ref ? r.ref.slice(0, 8) : ""))))))
      : h("p.muted", "Nothing yet."));
  }

  async function spin() {
    if (machine.dataset.state === "spinning") return;
    machine.dataset.state = "spinning";
    spinButton.disabled = true;
    result.textContent = "";
    let stopped = 0;
    let tick = 0;
    const timer = setInterval(() => {
      tick += 1;
      reels.forEach((node, i) => { if (i >= stopped) setReel(node, strip[(tick * (i + 3) + i * 7) % strip.length]); });
    }, 70);
    let out = null;
    try {
      [out] = await Promise.all([api("POST", "/players/me/spins", { client_seed: clientSeed.value }), sleep(600)]);
      for (let i = 0; i < 3; i++) {
        await sleep(350);
        stopped = i + 1;
        setReel(reels[i], out.reels[i]);
      }
    } catch (exc) {
      toast(errorText(exc), "error");
      result.textContent = errorText(exc);
    } finally {
      clearInterval(timer);
    }
    if (out) {
      reels.forEach((node, i) => setReel(node, out.reels[i]));
      result.textContent = out.prize
        ? `You won ${words(out.prize.special)} for ${out.prize.matches} matches!`
        : "No special this time.";
      result.className = out.prize ? "won" : "";
      replace(proof,
        h("div", "This spin's seed (revealed): ", h("code.hash#spin-seed", out.seed)),
        h("div", "Its hash, published before the spin: ", h("code.hash", out.seed_hash)),
        h("button#verify-spin.small", { type: "button", on: { click: async () => {
          const check = await api("GET", `/spins/${out.id}/verify`).catch((exc) => ({ ok: false, problems: [errorText(exc)] }));
          const line = h("span#verify-result", check.ok ? " ✓ the server recomputed these reels from the seed" : ` ✗ ${check.problems.join("; ")}`);
          proof.append(line);
        } } }, "Verify this spin"));
    }
    await load().catch(() => null);
    machine.dataset.state = out ? "done" : "idle";
  }
  spinButton.addEventListener("click", spin);

  try {
    await load();
  } catch (exc) {
    replace(root, h("p.error", errorText(exc)));
  }
}

/** The loadout picker of a Conquest lobby seat: a checkbox per owned special; changes are saved
 * at once (PUT /lobbies/{id}/loadout). ``current``: the seat's loadout. */
export function loadoutPicker(lobbyId, owned, current, onSaved) {
  const chosen = new Set(current || []);
  const status = h("span.small.muted#loadout-status");
  if (!owned.length) {
    return h("div#loadout-picker.loadout", h("h3", "Your specials"),
      h("p.muted.small", "You own no specials. ", h("a", { href: "#/inventory" }, "Spin the slot machine"), " to win some."));
  }
  return h("div#loadout-picker.loadout",
    h("h3", "Specials you bring"),
    h("div.loadout-options", owned.map((s) => h("label.loadout-option", { title: s.description },
      h("input", { type: "checkbox", checked: chosen.has(s.id), dataset: { special: s.id }, on: { change: async (e) => {
        if (e.target.checked) chosen.add(s.id); else chosen.delete(s.id);
        try {
          const lobby = await api("PUT", `/lobbies/${lobbyId}/loadout`, { loadout: owned.map((o) => o.id).filter((id) => chosen.has(id)) });
          status.textContent = "saved";
          onSaved?.(lobby);
        } catch (exc) {
          status.textContent = errorText(exc);
          e.target.checked = !e.target.checked;
        }
      } } }),
      ` ${symbolOf(s.id)} ${words(s.id)} `, h("span.muted.small", `(${s.matches_left} left, ${s.cost} mana)`)))),
    status);
}
