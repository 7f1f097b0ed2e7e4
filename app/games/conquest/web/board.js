// Hold'em Conquest board: the hex map of lands with their tables (flops), the battles with their
// community cards and hands, and the controls of each simultaneous phase: orders (attack), defence,
// assign (pool cards to hands), turn/river decisions (stay or fold). Everything shown comes from the
// server's view; face-down cards are drawn as backs because that is all the server sends.
// Specials (rules section 5): activate buttons with their costs for the seat's loadout, flops and
// hands seen through a special marked "seen" (only in that seat's view: the server sends them to it
// alone), shields on tables, the joker (the owner's mark before the final, the card it became at the
// final) and double_hand's kept cards.
import { h, s, replace, seatColour, words } from "/js/dom.js";
import { hexCentre, hexPoints, viewBoxOf } from "/js/hex.js";

const HEX = 54;
const NEUTRAL_COLOUR = "#6b7687";
const SUITS = { c: "♣", d: "♦", h: "♥", s: "♠" };

export const title = "Hold'em Conquest";

function ownerColour(owner) {
  return owner === null || owner === undefined || owner === "neutral" ? NEUTRAL_COLOUR : seatColour(owner);
}

function rankText(card) {
  return card[0] === "T" ? "10" : card[0];
}

/** "A♣" for {card: "Ac"}; "??" for a face-down card. */
export function cardName(c) {
  if (!c || !c.card) return "??";
  return rankText(c.card) + (SUITS[c.card[1]] || "");
}

/** A playing card element: face up when the server sent its face, a back otherwise. */
export function pokerCard(c, { onClick = null, chosen = false, small = false, title = "" } = {}) {
  const open = c && c.card;
  const red = open && (c.card[1] === "h" || c.card[1] === "d");
  const joker = c?.joker;
  const cls = ["pcard", open ? "" : "back", red ? "red" : "", c?.hidden && open ? "hidden-card" : "", chosen ? "chosen" : "",
    small ? "small" : "", onClick ? "" : "static", c?.seen ? "seen" : "", joker ? "joker" : "", c?.counted ? "counted" : ""].join(" ");
  let tip = title || (open ? (c.hidden ? `${cardName(c)} — hidden from the players` : cardName(c)) : "face down");
  if (open && c.seen) tip = `${cardName(c)} — seen through your ${words(c.seen)}`;
  if (joker) tip += joker === true ? " — your joker (others see it at the final)" : ` — joker, became ${cardName({ card: joker })}`;
  if (c?.counted) tip += " — counted at the final";
  const data = {};
  if (c?.id) data.card = c.id;
  if (c?.seen) data.seen = c.seen;
  if (joker) data.joker = joker === true ? "yes" : joker;
  return h(onClick ? "button" : "span", {
    class: cls, type: onClick ? "button" : undefined, dataset: data,
    title: tip,
    on: onClick ? { click: onClick } : undefined,
  }, open ? [h("span.rank", rankText(c.card)), h("span.suit", SUITS[c.card[1]] || ""),
    joker ? h("span.joker-mark", joker === true ? "★" : `★${cardName({ card: joker })}`) : null,
    c.seen ? h("span.seen-mark", "◉") : null] : h("span.rank", ""));
}

/** What a special does, for buttons and tooltips (the server's SPECIAL_DESCRIPTIONS say the same). */
const SPECIAL_HELP = {
  shield: "put 1-10 mana on the selected land of yours: others pay that much more to attack or scout it",
  scout: "see the selected table's face-down flop",
  loyalty: "see the flops of your own tables",
  spy: "see the flops of neutral lands",
  corruption: "see the flops of other players' lands (not shielded ones)",
  big_brother: "see every table's flop",
  read_hand: "see the hands of players attacking your tables",
  hound: "see the neutral's hand in your battles",
  joker: "once per battle, turn a card of your hand into a joker: the best card at the final",
  double_hand: "4 cards a hand; the best 2 count (choose at the river)",
  double_set: "4 pool cards per attacked table; the extra cards burn",
  double_income: "the selected land of yours yields 2 mana",
  full_double_income: "all your lands yield 2 mana",
  insurance: "lose at the final: get your stake back",
  free_fold: "a fold returns your whole stake",
};

function shield(x, y, colour) {
  return s("path", { d: `M${x - 7},${y - 8} h14 v6 c0,6 -4,9 -7,11 c-3,-2 -7,-5 -7,-11 z`, fill: colour, stroke: "#10141b", "stroke-width": 1.2 });
}

export function createBoard(ctx) {
  const { board: boardRoot, panel } = ctx;
  let msg = null;
  let view = null;
  let phaseKey = null;
  let orders = new Set();
  let defend = new Set();
  let folds = new Set();
  let assign = {}; // land -> [token, token]
  let keep = {}; // land -> [token, token]: double_hand's 2 of 4 at the river
  let shieldSize = 2;
  let focusLand = null;
  let selected = null; // land shown in detail
  let busy = false;

  const svg = s("svg.hexmap.conquest-map", { role: "img", "aria-label": "map of lands" });
  const legend = h("div.map-legend");
  const battles = h("div.battles#battles");
  replace(boardRoot, h("div.map-wrap", svg), legend, battles);

  const me = () => ctx.seat;
  const name = (seat) => (seat === "neutral" || seat === null || seat === undefined ? "neutral" : ctx.name(seat));
  const myPrompt = () => msg && msg.status === "running" && me() !== null && msg.prompts.find((p) => p.seat === me());

  async function act(action) {
    busy = true;
    render();
    try {
      await ctx.act(action);
    } catch {
      /* the shell shows the server's error */
    } finally {
      busy = false;
      render();
    }
  }

  function resetChoices() {
    const you = view.you || {};
    const sub = you.submission;
    orders = new Set(sub?.type === "orders" ? sub.attack : []);
    defend = new Set(sub?.type === "defend" ? sub.lands : []);
    folds = new Set(sub?.type === "decide" ? sub.folds : []);
    keep = sub?.type === "decide" && sub.keep ? Object.fromEntries(Object.entries(sub.keep).map(([l, c]) => [l, [...c]])) : {};
    assign = {};
    if (sub?.type === "assign") {
      for (const [land, cards] of Object.entries(sub.hands)) assign[land] = [...cards];
    }
    for (const land of you.battle_lands || []) if (!assign[land]) assign[land] = [];
    focusLand = null;
  }

  function update(message) {
    msg = message;
    view = message.view;
    const key = `${view.phase_id}:${view.phase}`;
    if (key !== phaseKey) {
      phaseKey = key;
      resetChoices();
    }
    render();
  }

  function render() {
    if (!view) return;
    renderMap();
    renderBattles();
    renderPanel();
  }

  // ----------------------------------------------------------------------------- map
  function renderMap() {
    const lands = view.lands;
    const centres = lands.map((l) => hexCentre(l.q, l.r, HEX));
    svg.setAttribute("viewBox", viewBoxOf(centres, HEX + 6));
    const you = view.you || {};
    const prompt = myPrompt();
    const attackable = new Set(prompt && view.phase === "orders" ? you.attackable || [] : []);
    const defendable = new Set(prompt && view.phase === "defence" ? you.defendable || [] : []);
    const attacks = new Map(view.attacks.map((a) => [a.land, a.attackers]));
    const defended = new Set(view.defences);
    const fighting = new Map(view.battles.map((b) => [b.land, b]));
    const starts = new Map(view.seats.map((st) => [st.start_land, st.seat]));
    const cells = [];
    const rings = [];
    lands.forEach((land, i) => {
      const [cx, cy] = centres[i];
      const colour = ownerColour(land.owner);
      const classes = ["land"];
      if (land.owner === me()) classes.push("own");
      if (land.owner === null) classes.push("neutral");
      const g = s("g", {
        class: classes.join(" "), dataset: { land: land.id, owner: land.owner ?? "neutral" }, tabindex: "0",
        on: { click: () => onLandClick(land.id), keydown: (e) => { if (e.key === "Enter") onLandClick(land.id); } },
      });
      const battle = fighting.get(land.id);
      g.append(
        s("title", `L${land.id} — ${land.owner === null ? "neutral" : name(land.owner)}` +
          `${attacks.has(land.id) ? ` · attacked by ${attacks.get(land.id).map(name).join(", ")}` : ""}` +
          `${defended.has(land.id) ? " · defended" : ""}${battle ? ` · battle (${battle.stage})` : ""}`),
        s("polygon.hex", { points: hexPoints(cx, cy, HEX - 1.5), fill: colour, stroke: colour }),
        s("text.pid", { x: cx, y: cy - 29, "text-anchor": "middle" }, `L${land.id}${starts.has(land.id) ? " ⚑" : ""}`),
      );
      // the table: its flop, face down unless the server showed it
      land.flop.forEach((c, k) => {
        const x = cx - 30 + k * 21, y = cy - 17;
        const open = !!c.card;
        g.append(s("rect", { class: `mini-card ${open ? "open" : "down"}${c.hidden && open ? " hidden" : ""}${c.seen ? " seen" : ""}`,
          x, y, width: 18, height: 25, rx: 3, dataset: c.seen ? { seen: c.seen } : undefined },
        c.seen ? s("title", `seen through your ${words(c.seen)}: only you see this flop`) : null));
        if (open) {
          const red = c.card[1] === "h" || c.card[1] === "d";
          g.append(s("text", { class: `mini-text${red ? " red" : ""}`, x: x + 9, y: y + 11, "text-anchor": "middle" }, rankText(c.card)),
            s("text", { class: `mini-text${red ? " red" : ""}`, x: x + 9, y: y + 22, "text-anchor": "middle" }, SUITS[c.card[1]]));
        }
      });
      const attackers = attacks.get(land.id) || [];
      attackers.forEach((seat, k) => {
        g.append(s("circle.attacker", { cx: cx - 8 * (attackers.length - 1) + 16 * k, cy: cy + 22, r: 6, fill: seatColour(seat) },
          s("title", `attacked by ${name(seat)}`)));
      });
      if (attackers.length) g.append(s("text.flags", { x: cx + 8 * attackers.length + 6, y: cy + 26 }, "⚔"));
      if (defended.has(land.id)) g.append(shield(cx - 8 * attackers.length - 14, cy + 22, ownerColour(land.owner)));
      if (land.shield) {
        g.append(s("g.table-shield", { dataset: { shield: land.shield } },
          s("title", `shielded: others pay ${land.shield} more mana to attack or scout it`),
          shield(cx + 28, cy - 28, "#d9b44a"), s("text.shield-n", { x: cx + 28, y: cy - 22, "text-anchor": "middle" }, String(land.shield))));
      }
      if (land.flop.some((c) => c.seen)) g.append(s("text.seen-eye", { x: cx + 36, y: cy - 4, "text-anchor": "middle" }, "◉"));
      if (battle && battle.stage !== "done") g.append(s("text.stage", { x: cx, y: cy + 42, "text-anchor": "middle" }, words(battle.stage)));
      cells.push(g);
      let ring = null;
      if (orders.has(land.id) && attackable.has(land.id)) ring = "ring-chosen";
      else if (defend.has(land.id) && defendable.has(land.id)) ring = "ring-defend";
      else if (attackable.has(land.id) || defendable.has(land.id)) ring = "ring-target";
      else if (selected === land.id) ring = "ring-selected";
      else if (battle && battle.stage !== "done") ring = "ring-battle";
      if (ring) rings.push(s("polygon", { class: ring, points: hexPoints(cx, cy, HEX - 4), "pointer-events": "none" }));
    });
    replace(svg, cells, rings);
    replace(legend, view.seats.map((st) => h("span.legend-item", { class: st.eliminated ? "out" : "" },
      h("span.swatch", { style: { background: seatColour(st.seat) } }), `${name(st.seat)}${st.seat === me() ? " (you)" : ""}`)),
    h("span.legend-item", h("span.swatch", { style: { background: NEUTRAL_COLOUR } }), "neutral"),
    h("span.legend-hint", "each land holds a table: its flop lies face down until a battle starts there · ⚑ start land · dots: attackers · shield: defended · gold shield: a special's shield · ◉ seen through your special"));
  }

  function onLandClick(id) {
    const prompt = myPrompt();
    const you = view.you || {};
    if (prompt && !busy && view.phase === "orders" && (you.attackable || []).includes(id)) {
      orders.has(id) ? orders.delete(id) : orders.add(id);
    } else if (prompt && !busy && view.phase === "defence" && (you.defendable || []).includes(id)) {
      defend.has(id) ? defend.delete(id) : defend.add(id);
    }
    selected = id;
    render();
  }

  // ----------------------------------------------------------------------------- battles
  function renderBattles() {
    if (!view.battles.length) {
      replace(battles, view.passed.length ? h("p.muted", "Undefended tables passed: " +
        view.passed.map((p) => `L${p.land} ${name(p.from)} → ${name(p.to)}`).join(", ")) : null);
      return;
    }
    replace(battles, h("h3", `Battles · round ${view.round}`), h("div.battle-grid", view.battles.map(battleCard)));
  }

  function battleCard(b) {
    const community = [...(b.flop || [{}, {}, {}]), b.turn || null, b.river || null];
    return h("div.battle-card", { dataset: { land: b.land, stage: b.stage }, class: b.stage === "done" ? "done" : "" },
      h("div.battle-head", h("strong", `L${b.land}`), ` held by ${name(b.holder)} · `,
        b.stage === "done" ? h("span.won", `won by ${name(b.winner)} (${words(b.result)})`) : words(b.stage)),
      h("div.community", community.map((c, i) => c ? pokerCard(c, { small: true }) : h("span.pcard.small.slot", { title: i === 3 ? "turn" : "river" }, i === 3 ? "T" : "R"))),
      h("table.hands", h("tbody", b.participants.map((p) => h("tr", { class: p.seat === me() ? "me" : "" },
        h("td", h("span.swatch", { style: { background: ownerColour(p.seat) } }), name(p.seat), p.seat === me() ? " (you)" : ""),
        h("td.muted.small", words(p.role)),
        h("td.hand", p.hand ? p.hand.map((c) => pokerCard(c, { small: true })) : h("span.muted.small", "assigning…")),
        h("td.small", { class: p.status === "live" ? "" : "muted" }, words(p.status)),
        h("td.small.muted", p.paid !== undefined ? `${p.paid} paid` : ""),
        h("td.small", p.category ? words(p.category) : "")))))); 
  }

  // ----------------------------------------------------------------------------- panel
  function renderPanel() {
    const you = view.you;
    const out = [];
    const prompt = myPrompt();
    if (you) {
      out.push(h("div.you-line", h("strong", `${you.mana} mana`), ` · ${view.seats[you.seat].tables} of ${view.tables_to_win} tables to win`));
    }
    if (view.seats.some((st) => st.specials?.length)) {
      out.push(h("div.specials-public.small", h("span.muted", "Specials in play: "),
        view.seats.filter((st) => st.specials?.length).map((st) => h("span.tag", { dataset: { seat: st.seat } },
          `${name(st.seat)}: ${st.specials.map(words).join(", ")}${st.double_income_land !== null && st.double_income_land !== undefined ? ` (2× on L${st.double_income_land})` : ""}`))));
    }
    if (you?.loadout?.length && view.phase !== "over" && !ctx.readOnly) out.push(specialsBox(you, prompt));
    if (view.phase === "over") {
      out.push(h("p.hint", "The match is over."));
    } else if (you && prompt && !ctx.readOnly) {
      out.push(phaseControls(you, prompt));
    } else if (you && !ctx.readOnly) {
      out.push(h("p.hint", `Nothing for you to decide in this ${words(view.phase)} phase; waiting for the others.`));
      if (you.pool?.length) out.push(h("div.subhead", "Your pool"), h("div.pool", you.pool.map((c) => pokerCard(c))));
    } else if (ctx.admin && view.pools) {
      const pools = Object.entries(view.pools);
      if (pools.length) {
        out.push(h("div.subhead", "Pools (private)"), pools.map(([seat, cards]) =>
          h("div.pool", h("span.small", `${name(Number(seat))}: `), cards.map((c) => pokerCard(c, { small: true })))));
      }
      const subs = Object.entries(view.submissions || {});
      if (subs.length) {
        out.push(h("div.subhead", "Submissions so far (secret)"),
          h("ul.small", subs.map(([seat, sub]) => h("li", `${name(Number(seat))}: ${JSON.stringify(sub)}`))));
      }
    }
    if (selected !== null) out.push(landDetail(view.lands[selected]));
    if (!ctx.admin) {
      out.push(h("details.how-to", h("summary", "How to play"), h("ul.small",
        h("li", "Each round: orders (attack lands next to yours, 1 mana each), defence (1 mana per attacked table you defend), then the battles."),
        h("li", "An undefended table attacked by one player passes to them; otherwise the players (and the neutral, on a neutral land) play a hand of Texas hold'em on that table's flop."),
        h("li", "Turn costs 1 mana, river 2; fold after a card opens to get 1 back. The best five-card hand at the end wins the land."),
        h("li", "With several battles you assign your pool: two cards to each table. You earn 1 mana per table each round."),
        h("li", `First to ${view.tables_to_win} tables wins; after ${view.max_rounds} rounds, most tables then most mana.`))));
    }
    replace(panel, out);
  }

  function specialsBox(you, prompt) {
    const active = new Set(view.seats[you.seat].specials || []);
    const land = selected;
    const mine = land !== null && view.lands[land]?.owner === you.seat;
    // specials are used at any moment by a living seat, prompted or not (seed 5.1.3)
    const canAct = !busy && msg?.status === "running" && !view.seats[you.seat].eliminated;
    const rows = you.loadout.map((id) => {
      const cost = you.special_costs[id];
      let label, action = null, why = "";
      if (id === "scout") {
        const price = land !== null ? you.scout_costs?.[String(land)] : undefined;
        label = land === null ? "Scout: select a land" : price === undefined ? `Scout L${land}: already seen` : `Scout L${land} (${price} mana)`;
        if (price !== undefined) action = { type: "special", special: "scout", land };
        if (price > you.mana) action = null;
      } else if (id === "shield") {
        const size = Math.max(1, Math.min(10, shieldSize));
        label = mine ? `Shield L${land} with ${size} (${cost + size} mana)` : "Shield: select a land of yours";
        if (mine && !view.lands[land].shield) action = { type: "special", special: "shield", land, mana: size };
        if (cost + size > you.mana) action = null;
      } else if (active.has(id)) {
        label = `${words(id)}: active`;
        why = "active";
      } else if (id === "double_income") {
        label = mine ? `Double income on L${land} (${cost} mana)` : "Double income: select a land of yours";
        if (mine && cost <= you.mana) action = { type: "special", special: id, land };
      } else {
        label = `Activate ${words(id)} (${cost} mana)`;
        if (cost <= you.mana) action = { type: "special", special: id };
      }
      return h("div.special-row", { dataset: { special: id } },
        h("button.small.special-btn", {
          type: "button", id: `special-${id}`, class: why, title: SPECIAL_HELP[id] || "", disabled: !canAct || !action,
          on: { click: () => act(action) },
        }, label),
        id === "shield" ? h("input.shield-size", { type: "number", min: 1, max: 10, value: shieldSize, title: "shield mana",
          on: { change: (e) => { shieldSize = Number(e.target.value) || 1; render(); } } }) : null);
    });
    return h("div.phase-box.specials-box#specials",
      h("div.subhead", "Your specials"),
      h("p.small.muted", "Use them at any moment: paid at once, they last to the end of the match. Select a land on the map for scout, shield and double income."),
      rows);
  }

  function landDetail(land) {
    const attack = view.attacks.find((a) => a.land === land.id);
    return h("div.land-detail",
      h("div.subhead", `Land L${land.id}`),
      h("div", h("span.swatch", { style: { background: ownerColour(land.owner) } }), land.owner === null ? "neutral" : name(land.owner),
        ` · neighbours ${land.neighbours.map((n) => "L" + n).join(", ")}`),
      h("div.pool", land.flop.map((c) => pokerCard(c, { small: true }))),
      attack ? h("div.small", `attacked by ${attack.attackers.map(name).join(", ")}${view.defences.includes(land.id) ? " · defended" : ""}`) : null);
  }

  function submitted(you) {
    return you.submission ? h("p.small.ok", "✓ Submitted — you may change it until the phase ends.") : null;
  }

  function phaseControls(you, prompt) {
    const disabled = busy;
    if (view.phase === "orders") {
      const list = you.attackable || [];
      const n = orders.size;
      return h("div.phase-box",
        h("div.subhead", "Orders: choose lands to attack"),
        h("p.small.muted", `1 mana each, paid now; at most ${you.max_battles} battles a round. Click lands on the map or here.`),
        h("div.target-list", list.map((land) => h("button.target-btn.attack", {
          type: "button", class: orders.has(land) ? "on" : "", dataset: { land }, disabled,
          on: { click: () => { orders.has(land) ? orders.delete(land) : orders.add(land); render(); } },
        }, `${orders.has(land) ? "✓ " : ""}L${land} · ${view.lands[land].owner === null ? "neutral" : name(view.lands[land].owner)}`))),
        h("button#submit-orders.primary", { type: "button", disabled,
          on: { click: () => act({ type: "orders", attack: [...orders].sort((a, b) => a - b) }) } },
        n ? `Attack ${n} land${n === 1 ? "" : "s"} (${n} mana)` : "No attacks this round"),
        submitted(you));
    }
    if (view.phase === "defence") {
      const list = you.defendable || [];
      return h("div.phase-box",
        h("div.subhead", "Defence: your attacked tables"),
        h("p.small.muted", "1 mana each. An undefended table attacked by one player passes to them without a battle."),
        h("div.target-list", list.map((land) => {
          const attackers = view.attacks.find((a) => a.land === land)?.attackers || [];
          return h("button.target-btn.move", {
            type: "button", class: defend.has(land) ? "on" : "", dataset: { land }, disabled,
            on: { click: () => { defend.has(land) ? defend.delete(land) : defend.add(land); render(); } },
          }, `${defend.has(land) ? "✓ " : ""}L${land} ← ${attackers.map(name).join(", ")}`);
        })),
        h("button#submit-defence.primary", { type: "button", disabled,
          on: { click: () => act({ type: "defend", lands: [...defend].sort((a, b) => a - b) }) } },
        defend.size ? `Defend ${defend.size} (${defend.size} mana)` : "Defend none"),
        submitted(you));
    }
    if (view.phase === "assign") {
      const lands = you.battle_lands || [];
      const used = new Set(Object.values(assign).flat());
      const size = you.hand_size || 2;
      const complete = lands.every((land) => (assign[land] || []).length === size);
      const byId = new Map(you.pool.map((c) => [c.id, c]));
      const place = (id) => {
        if (used.has(id)) {
          for (const land of Object.keys(assign)) assign[land] = assign[land].filter((t) => t !== id);
        } else {
          const target = [focusLand, ...lands].find((land) => land !== null && (assign[land] || []).length < size);
          if (target === undefined) return;
          (assign[target] ||= []).push(id);
        }
        render();
      };
      return h("div.phase-box",
        h("div.subhead", `Assign your pool: ${size} cards to each table`),
        h("p.small.muted", "Click a pool card to put it on the highlighted table; click a placed card to take it back." +
          (you.pool.length > size * lands.length ? " Cards left in the pool burn (double set)." : "")),
        h("div.pool#pool", you.pool.map((c) => pokerCard(c, { chosen: used.has(c.id), onClick: disabled ? null : () => place(c.id) }))),
        lands.map((land) => h("div.assign-row", {
          class: focusLand === land ? "focus" : "", dataset: { land },
          on: { click: (e) => { if (e.target.closest(".pcard")) return; focusLand = land; render(); } },
        },
        h("span", `L${land}`),
        Array.from({ length: size }, (_, k) => k).map((k) => {
          const id = (assign[land] || [])[k];
          return id ? pokerCard(byId.get(id) || { id }, { onClick: disabled ? null : () => place(id) }) : h("span.pcard.slot", "+");
        }))),
        h("div.row",
          h("button#submit-assign.primary", { type: "button", disabled: disabled || !complete,
            on: { click: () => act({ type: "assign", hands: Object.fromEntries(lands.map((l) => [String(l), assign[l]])) }) } }, "Submit hands"),
          h("button.small", { type: "button", disabled, on: { click: () => {
            assign = {};
            lands.forEach((l, i) => { assign[l] = you.pool.slice(size * i, size * i + size).map((c) => c.id); });
            render();
          } } }, "deal order")),
        submitted(you));
    }
    if (view.phase === "turn" || view.phase === "river") {
      const lands = you.decision_lands || [];
      return h("div.phase-box",
        h("div.subhead", `${words(view.phase)} decision: stay or fold`),
        h("p.small.muted", "Folding now returns 1 mana. No answer means stay."),
        lands.map((land) => {
          const b = view.battles.find((x) => x.land === land);
          const mine = b?.participants.find((p) => p.seat === me());
          const hand = mine?.hand || [];
          const jokerFree = you.loadout?.includes("joker") && !(you.jokers || []).includes(land) &&
            ((view.seats[you.seat].specials || []).includes("joker") || you.special_costs.joker <= you.mana);
          const choosing = view.phase === "river" && hand.length === 4 && !folds.has(land);
          const kept = keep[String(land)] || [];
          const onCard = (c) => {
            if (!choosing || disabled) return null;
            return () => {
              const list = kept.includes(c.id) ? kept.filter((t) => t !== c.id) : [...kept, c.id].slice(-2);
              keep[String(land)] = list;
              render();
            };
          };
          return h("div.decide-row", { dataset: { land } },
            h("strong", `L${land}`),
            h("span.pool", hand.map((c) => pokerCard(kept.includes(c.id) ? { ...c, counted: true } : c, { small: true, onClick: onCard(c) }))),
            choosing ? h("span.small.muted", kept.length === 2 ? "these 2 count" : "pick the 2 that count (else the best 2)") : null,
            jokerFree && !disabled ? h("span.joker-pick", h("span.small.muted", "joker:"), hand.map((c) => h("button.small.joker-btn", {
              type: "button", dataset: { card: c.id }, title: "turn this card into a joker",
              on: { click: () => act({ type: "special", special: "joker", land, card: c.id }) },
            }, cardName(c)))) : null,
            h("button.small", { type: "button", class: folds.has(land) ? "on fold" : "", disabled,
              on: { click: () => { folds.has(land) ? folds.delete(land) : folds.add(land); render(); } } },
            folds.has(land) ? "fold" : "stay"));
        }),
        h("button#submit-decide.primary", { type: "button", disabled,
          on: { click: () => {
            const action = { type: "decide", folds: [...folds].sort((a, b) => a - b) };
            const chosen = Object.entries(keep).filter(([l, c]) => c.length === 2 && lands.includes(Number(l)) && !folds.has(Number(l)));
            if (view.phase === "river" && chosen.length) action.keep = Object.fromEntries(chosen);
            act(action);
          } } },
        folds.size ? `Fold ${folds.size}, stay on the rest` : "Stay everywhere"),
        submitted(you));
    }
    return h("p.muted", `Phase: ${words(view.phase)}`);
  }

  return {
    update,
    destroy() { boardRoot.replaceChildren(); panel.replaceChildren(); },
  };
}

export function seatStats(view, seat) {
  const st = view.seats[seat];
  if (!st) return "";
  const status = st.eliminated ? " · out" : st.must_act ? (st.submitted ? " · ✓" : " · deciding") : "";
  return `${st.mana} mana · ${st.tables} table${st.tables === 1 ? "" : "s"}${status}`;
}

export function phaseText(view) {
  if (view.phase === "over") return "match over";
  return `round ${view.round}/${view.max_rounds} · ${words(view.phase)} · ${view.tables_to_win} tables win`;
}

const cards = (list) => (list || []).map(cardName).join(" ");

export function describe(ev, nameOf) {
  const name = (seat) => (seat === "neutral" ? "neutral" : nameOf(seat));
  switch (ev.type) {
    case "submitted":
      return { text: `${name(ev.seat)} submitted ${words(ev.kind)}`, seat: ev.seat, kind: "minor" };
    case "round_started":
      return { text: `Round ${ev.round}`, kind: "turn" };
    case "activations":
      return { text: ev.attacks.length ? "Attacks: " + ev.attacks.map((a) => `L${a.land} by ${a.attackers.map(name).join(" & ")}`).join("; ") : "No attacks this round" };
    case "defences":
      return { text: ev.lands.length ? `Defended: ${ev.lands.map((l) => "L" + l).join(", ")}` : "No table defended", kind: "minor" };
    case "table_passed":
      return { text: `L${ev.land} passes undefended from ${name(ev.from)} to ${name(ev.to)}`, seat: ev.to, kind: "big" };
    case "pool_dealt":
      return { text: `Your pool for ${ev.lands.map((l) => "L" + l).join(", ")}: ${cards(ev.cards)}`, seat: ev.seat };
    case "hands_set":
      return { text: "Your hands: " + ev.hands.map((x) => `L${x.land} ${cards(x.cards)}`).join(", "), seat: ev.seat, kind: "minor" };
    case "battle_started":
      return { text: `Battle on L${ev.land}: flop ${cards(ev.flop)}`, kind: "battle" };
    case "stage_paid":
      return { text: `L${ev.land} ${ev.stage} paid by ${ev.paid.map(name).join(", ") || "nobody"}` +
        (ev.technical_folds.length ? `; out (cannot pay): ${ev.technical_folds.map(name).join(", ")}` : ""), kind: "minor" };
    case "card_opened":
      return { text: `L${ev.land} ${ev.stage}: ${cardName(ev.card)}` };
    case "battles_started":
      return {
        text: `Battles start on ${ev.battles.map((b) => "L" + b.land).join(", ")}`, kind: "battle",
        detail: h("div.battle", ev.battles.map((b) => h("div", `L${b.land}: flop ${cards(b.flop)} — ` +
          `${b.attackers.map(name).join(" & ")} against ${b.defender === null || b.defender === undefined ? name(b.holder) : name(b.defender)}`))),
      };
    case "stage_opened": {
      const open = ev.tables.filter((t) => t.card);
      const out = ev.tables.flatMap((t) => t.technical_folds.map((seat) => `${name(seat)} on L${t.land}`));
      return {
        text: `${words(ev.stage)}: ` + (open.map((t) => `L${t.land} ${cardName(t.card)}`).join(", ") || "no table left open") +
          (out.length ? ` · out, cannot pay: ${out.join(", ")}` : ""),
      };
    }
    case "folds":
      return { text: `Folds at the ${ev.stage}: ` + ev.folds.map((f) => `${name(f.seat)} on L${f.land} (${f.refund} back)`).join(", "),
        seat: ev.folds.length === 1 ? ev.folds[0].seat : null };
    case "folded":
      return { text: `${name(ev.seat)} folded on L${ev.land} at the ${ev.stage} (${ev.refund} back)`, seat: ev.seat };
    case "showdown":
      return {
        text: `Showdown on L${ev.land}`, kind: "battle",
        detail: h("div.battle", ev.hands.map((x) => h("div", `${name(x.seat)}: ${cards(x.cards)} — ${words(x.category)}`))),
      };
    case "battle_won":
      return { text: `L${ev.land} won by ${name(ev.winner)} (${words(ev.result)})`, seat: ev.winner === "neutral" ? null : ev.winner, kind: "big" };
    case "eliminated":
      return { text: `${name(ev.seat)} was eliminated`, seat: ev.seat, kind: "big" };
    case "income":
      return { text: "Income: " + ev.tables.map((t, seat) => `${name(seat)} +${t}`).join(", "), kind: "minor" };
    case "match_over":
      return { text: `Match over (${words(ev.reason)})`, kind: "big" };
    case "special_used":
      return { text: `${name(ev.seat)} used ${words(ev.special)}` + (ev.shield ? ` (${ev.shield} on L${ev.land})` : ev.land !== undefined ? ` on L${ev.land}` : "") +
        ` · ${ev.cost} mana`, seat: ev.seat };
    case "special_seen":
      return { text: ev.flop ? `Your scout: L${ev.land} flop ${ev.flop.map((c) => cardName({ card: c })).join(" ")}` : `Your joker is set on L${ev.land}`,
        seat: ev.seat, kind: "minor" };
    default:
      return { text: words(ev.type), kind: "minor" };
  }
}
