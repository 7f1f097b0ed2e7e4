// Provinces board: the hex map with garrisons, selection, attack / move / sort / dealing mode /
// end turn (docs/games/provinces.md). Everything drawn comes from the server's view: the page
// keeps only what the player is pointing at (selected province, chosen cards, a draft order).
import { h, s, replace, seatColour, SUIT_SYMBOL, isRedSuit, words } from "/js/dom.js";
import { hexCentre, hexPoints, viewBoxOf } from "/js/hex.js";

const HEX = 46; // hex radius in SVG units
const MODES = ["evenly", "randomly", "most_unevenly"];

export const title = "Provinces";

function centre(p) {
  return hexCentre(p.q, p.r, HEX);
}

export function cardLabel(c) {
  if (c.value === null || c.value === undefined) return "Joker";
  const face = `${c.rank}${SUIT_SYMBOL[c.suit] || ""}`;
  return face;
}

function faceValue(rank) {
  return { J: 11, Q: 12, K: 13, A: 14 }[rank] ?? Number(rank);
}

/** On the map: the rank while a card has its face value (J, Q, K, A read faster), else its value. */
function chipText(c) {
  return c.value === faceValue(c.rank) ? c.rank : String(c.value);
}

function cardText(c) {
  if (c.value === null || c.value === undefined) return c.hidden ? "joker (hidden)" : "joker";
  return c.value === faceValue(c.rank) ? `${c.rank}` : `${c.rank}=${c.value}`;
}

/** A card as a DOM element (panel, battle reports). */
export function cardEl(c, { chosen = false, onClick = null, extra = null } = {}) {
  const joker = c.value === null || c.value === undefined;
  const reduced = !joker && c.value !== faceValue(c.rank);
  return h(
    "button.card",
    {
      type: "button",
      class: [joker ? "joker" : "", isRedSuit(c.suit) ? "red" : "", chosen ? "chosen" : "", c.hidden ? "hidden-card" : "",
        onClick ? "" : "static"].join(" "),
      dataset: { card: c.id },
      title: joker ? (c.hidden ? "joker — hidden from the other players" : "your joker — the others cannot see it")
        : `${c.rank} of ${c.suit}, value ${c.value}`,
      on: onClick ? { click: onClick } : undefined,
      tabIndex: onClick ? 0 : -1,
    },
    joker ? h("span.rank", "★") : h("span.rank", c.rank, h("span.suit", SUIT_SYMBOL[c.suit] || "")),
    h("span.value", joker ? (c.hidden ? "hidden" : "joker") : String(c.value)),
    reduced ? h("span.was", `was ${faceValue(c.rank)}`) : null,
    extra,
  );
}

export function createBoard(ctx) {
  const { board: boardRoot, panel } = ctx;
  let msg = null;
  let view = null;
  let selected = null; // province id
  let chosen = new Set(); // card ids chosen for an attack or a move
  let chosenFor = ""; // garrison signature the choice was made for
  let draft = null; // draft order (card ids) for a sort
  let busy = false;
  let flash = new Map(); // province id -> css class, for the battles of the latest state
  let battles = []; // {from, to, seat, result} of this turn's battles: arrows on the map
  let previousBattles = []; // the previous turn's, drawn faded

  const svg = s("svg.hexmap", { role: "img", "aria-label": "province map" });
  const legend = h("div.map-legend");
  replace(boardRoot, h("div.map-wrap", svg), legend);

  const me = () => ctx.seat;
  const myTurn = () => msg && msg.status === "running" && me() !== null && view.current_seat === me() &&
    msg.prompts.some((p) => p.seat === me());
  const name = (seat) => ctx.name(seat);

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

  function select(pid) {
    if (selected === pid) return;
    selected = pid;
    chosen = new Set();
    chosenFor = "";
    draft = null;
    syncSelection();
    render();
  }

  function syncSelection() {
    if (selected === null) return;
    const p = view.provinces[selected];
    if (!p || (me() !== null && p.owner !== me() && !ctx.readOnly)) {
      // a province we lost: keep showing it, but the choice of cards no longer applies
      chosen = new Set();
      draft = null;
      return;
    }
    const signature = p.garrison.map((c) => c.id).join(",");
    if (signature !== chosenFor) {
      chosen = new Set(p.garrison.map((c) => c.id));
      chosenFor = signature;
      draft = null;
    }
  }

  function update(message) {
    msg = message;
    view = message.view;
    flash = new Map();
    for (const ev of message.events || []) {
      if (ev.type === "battle") {
        flash.set(ev.to, ev.result === "conquered" ? "flash-conquered" : "flash-repelled");
        flash.set(ev.from, "flash-from");
        battles.push({ from: ev.from, to: ev.to, seat: ev.seat, result: ev.result });
      } else if (ev.type === "turn_started") {
        previousBattles = battles;
        battles = [];
      }
    }
    syncSelection();
    render();
  }

  function render() {
    if (!view) return;
    renderMap();
    renderPanel();
  }

  // ----------------------------------------------------------------------------- the map
  function renderMap() {
    const provinces = view.provinces;
    const centres = provinces.map(centre);
    svg.setAttribute("viewBox", viewBoxOf(centres, HEX + 6));

    const sel = selected !== null ? provinces[selected] : null;
    const mine = sel && sel.owner === me();
    const targets = new Set();
    const moves = new Set();
    if (sel && mine && myTurn()) {
      for (const a of sel.adjacent) (provinces[a].owner === me() ? moves : targets).add(a);
    }

    const cells = [];
    const overlay = [];
    provinces.forEach((p, i) => {
      const [cx, cy] = centres[i];
      const colour = seatColour(p.owner);
      const classes = ["province"];
      if (p.owner === me()) classes.push("own");
      if (targets.has(p.id)) classes.push("target");
      if (moves.has(p.id)) classes.push("move-target");
      if (selected === p.id) classes.push("selected");
      if (flash.has(p.id)) classes.push(flash.get(p.id));
      const g = s("g", {
        class: classes.join(" "),
        dataset: { province: p.id, owner: p.owner },
        tabindex: "0",
        on: { click: () => onProvinceClick(p.id), keydown: (e) => { if (e.key === "Enter") onProvinceClick(p.id); } },
      });
      g.append(
        s("title", `P${p.id} — ${name(p.owner)}: ${p.garrison.map(cardText).join(", ") || "no cards"}` +
          `${p.attacked ? " · attacked this turn" : ""}${p.received ? " · received cards this turn" : ""}`),
        s("polygon.hex", { points: hexPoints(cx, cy, HEX - 1.5), fill: colour, stroke: colour }),
        s("text.pid", { x: cx, y: cy - 25, "text-anchor": "middle" }, `P${p.id}`),
      );
      // garrison chips: up to 7, rows of 4 then 3 (top of the garrison first)
      const cards = p.garrison;
      cards.forEach((c, k) => {
        const row = k < 4 ? 0 : 1;
        const inRow = row === 0 ? Math.min(cards.length, 4) : cards.length - 4;
        const col = row === 0 ? k : k - 4;
        const w = 16, gap = 2;
        const x0 = cx - (inRow * w + (inRow - 1) * gap) / 2 + col * (w + gap);
        const y0 = cy - 14 + row * 20;
        const joker = c.value === null || c.value === undefined;
        const reduced = !joker && c.value !== faceValue(c.rank);
        g.append(
          s("rect.chip", { x: x0, y: y0, width: w, height: 18, rx: 3,
            class: joker ? (c.hidden ? "chip-hidden" : "chip-joker") : reduced ? "chip-reduced" : "" }),
          s("text.chip-text", { x: x0 + w / 2, y: y0 + 13, "text-anchor": "middle",
            class: joker ? "joker" : isRedSuit(c.suit) ? "red" : "" }, joker ? "★" : chipText(c)),
        );
      });
      // "empty" only for a viewer who sees the whole garrison; others may be missing hidden jokers
      if (!cards.length) g.append(s("text.empty", { x: cx, y: cy + 5, "text-anchor": "middle" }, p.owner === me() || ctx.admin ? "empty" : "—"));
      const flags = `${p.attacked ? "⚔" : ""}${p.received ? "✚" : ""}`;
      if (flags) g.append(s("text.flags", { x: cx, y: cy + 35, "text-anchor": "middle" }, flags));
      cells.push(g);
      if (selected === p.id || targets.has(p.id) || moves.has(p.id)) {
        overlay.push(s("polygon", {
          class: selected === p.id ? "ring-selected" : targets.has(p.id) ? "ring-target" : "ring-move",
          points: hexPoints(cx, cy, HEX - 4), "pointer-events": "none",
        }));
      }
    });
    for (const [list, old] of [[previousBattles, true], [battles, false]]) {
      for (const b of list) {
        if (provinces[b.from] && provinces[b.to]) overlay.push(battleArrow(centres[b.from], centres[b.to], b, old));
      }
    }
    replace(svg, s("defs", s("marker", { id: "arrowhead", viewBox: "0 0 10 10", refX: 7, refY: 5, markerWidth: 5, markerHeight: 5, orient: "auto-start-reverse" },
      s("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#fff" }))), cells, overlay);

    replace(legend, view.seat_order.map((seat) => {
      const info = view.seats[seat];
      return h("span.legend-item", { class: info.alive ? "" : "out" },
        h("span.swatch", { style: { background: seatColour(seat) } }),
        `${name(seat)}${seat === me() ? " (you)" : ""}`);
    }), h("span.legend-hint", "garrisons top first · J=11 Q=12 K=13 A=14 · tan: a card that lost points · ★ your joker · ⚔ attacked · ✚ received cards · arrows: battles of this turn (faded: the previous turn; dashed: repelled)"));
  }

  function battleArrow([x1, y1], [x2, y2], battle, old) {
    // from near the attacker's centre to near the target's, drawn over the map
    const dx = x2 - x1, dy = y2 - y1, len = Math.hypot(dx, dy) || 1;
    const ux = dx / len, uy = dy / len;
    return s("g", { class: `battle-arrow ${battle.result}${old ? " old" : ""}`, "pointer-events": "none" },
      s("line", { x1: x1 + ux * 18, y1: y1 + uy * 18, x2: x2 - ux * 16, y2: y2 - uy * 16, stroke: seatColour(battle.seat), "stroke-width": 7, "stroke-linecap": "round", opacity: 0.85 }),
      s("line", { x1: x1 + ux * 18, y1: y1 + uy * 18, x2: x2 - ux * 16, y2: y2 - uy * 16, stroke: "#fff", "stroke-width": 2.5, "marker-end": "url(#arrowhead)" }),
      s("title", `${old ? "previous turn" : "this turn"}: ${ctx.name(battle.seat)} attacked P${battle.to} from P${battle.from}, ${battle.result}`));
  }

  function onProvinceClick(pid) {
    const p = view.provinces[pid];
    const sel = selected !== null ? view.provinces[selected] : null;
    if (sel && sel.owner === me() && myTurn() && p.owner !== me() && sel.adjacent.includes(pid)) {
      attack(sel, p);
      return;
    }
    select(pid);
  }

  function chosenCards(p) {
    return p.garrison.filter((c) => chosen.has(c.id)).map((c) => c.id);
  }

  function attack(from, to) {
    const cards = chosenCards(from);
    act({ type: "attack", from: from.id, to: to.id, cards });
  }

  function move(from, to) {
    act({ type: "move", from: from.id, to: to.id, cards: chosenCards(from) });
  }

  // ----------------------------------------------------------------------------- the panel
  function renderPanel() {
    const children = [];
    const turn = myTurn();
    if (me() !== null && !ctx.readOnly && msg.status === "running") {
      children.push(h("div.turn-actions",
        h("button#end-turn.primary", {
          type: "button", disabled: !turn || busy,
          on: { click: () => act({ type: "end_turn" }) },
          title: turn ? "end your turn: you get one card per province you hold" : "wait for your turn",
        }, "End turn"),
        h("label.dealing", "Dealing ",
          h("select#dealing-mode", {
            disabled: !turn || busy,
            title: "where your reinforcements go (only you see this); change it during your turn",
            on: { change: (e) => act({ type: "set_dealing", mode: e.target.value }) },
          }, MODES.map((m) => h("option", { value: m, selected: view.dealing_mode === m }, words(m)))),
        ),
      ));
    } else if (ctx.admin && view.dealing_modes) {
      children.push(h("div.muted", "Dealing modes: " + view.dealing_modes.map((m, seat) => `${name(seat)} ${words(m)}`).join(" · ")));
    }

    const p = selected !== null ? view.provinces[selected] : null;
    if (!p) {
      children.push(h("p.hint", me() !== null && !ctx.readOnly
        ? "Select one of your provinces on the map to attack, move or sort its garrison."
        : "Select a province to see its garrison."));
    } else {
      children.push(provincePanel(p, turn));
    }
    if (!ctx.admin) children.push(howTo());
    if (ctx.admin && view.shoe) {
      children.push(h("details.admin-extra",
        h("summary", `Shoe (${view.shoe.length}, top first) · discard (${view.discard.length})`),
        h("p.mono", view.shoe.join(", ") || "empty"),
        h("p.mono", "discard: " + (view.discard.join(", ") || "empty"))));
    }
    replace(panel, children);
  }

  function provincePanel(p, turn) {
    const mine = p.owner === me() && !ctx.readOnly;
    const canAct = mine && turn && !busy;
    const sortable = mine && p.frontline;
    const order = draft || p.garrison.map((c) => c.id);
    const byId = new Map(p.garrison.map((c) => [c.id, c]));
    const flags = [];
    if (p.frontline) flags.push("frontline");
    if (p.attacked) flags.push("attacked this turn");
    if (p.received) flags.push("received cards this turn");
    const head = h("div.province-head",
      h("span.swatch", { style: { background: seatColour(p.owner) } }),
      h("strong", `P${p.id}`), ` · ${name(p.owner)}${p.owner === me() ? " (you)" : ""} · ${p.size}/${view.max_garrison} cards`,
      flags.length ? h("div.muted", flags.join(" · ")) : null);

    const cards = h("div.garrison", { "aria-label": "garrison, top first" },
      order.map((id, index) => {
        const c = byId.get(id);
        if (!c) return null;
        const arrows = sortable && canAct ? h("span.sort-arrows",
          h("span.arrow", { role: "button", title: "move up", on: { click: (e) => { e.stopPropagation(); shift(p, index, -1); } } }, "▲"),
          h("span.arrow", { role: "button", title: "move down", on: { click: (e) => { e.stopPropagation(); shift(p, index, 1); } } }, "▼"),
        ) : null;
        return cardEl(c, {
          chosen: mine && chosen.has(id),
          onClick: mine ? () => { chosen.has(id) ? chosen.delete(id) : chosen.add(id); render(); } : null,
          extra: arrows,
        });
      }),
      p.garrison.length ? null : h("span.muted", "no cards"));

    const out = [head, h("div.muted.small", "Garrison, top first" + (mine ? " — click cards to choose which go" : "")), cards];
    if (mine) {
      const n = chosenCards(p).length;
      out.push(h("div.choose-row",
        h("button.small", { type: "button", on: { click: () => { chosen = new Set(p.garrison.map((c) => c.id)); render(); } } }, "all"),
        h("button.small", { type: "button", on: { click: () => { chosen = new Set(); render(); } } }, "none"),
        h("span.muted", ` ${n} of ${p.garrison.length} chosen`)));
      if (sortable && draft) {
        out.push(h("div.choose-row",
          h("button#apply-order.primary.small", { type: "button", disabled: !canAct,
            on: { click: () => { const order = draft; draft = null; act({ type: "sort", province: p.id, order }); } } }, "Apply new order"),
          h("button.small", { type: "button", on: { click: () => { draft = null; render(); } } }, "reset")));
      } else if (!p.frontline) {
        out.push(h("div.muted.small", "Only frontline provinces can be sorted."));
      }
      const enemies = p.adjacent.filter((a) => view.provinces[a].owner !== me());
      const friends = p.adjacent.filter((a) => view.provinces[a].owner === me());
      if (enemies.length) {
        out.push(h("div.subhead", `Attack with ${n} card${n === 1 ? "" : "s"}`),
          h("div.target-list", enemies.map((a) => {
            const t = view.provinces[a];
            return h("button.target-btn.attack", {
              type: "button", disabled: !canAct, dataset: { attack: a },
              on: { click: () => attack(p, t) },
              title: `attack P${a}: ${t.garrison.map(cardText).join(", ") || "no visible cards"}`,
            }, h("span.swatch", { style: { background: seatColour(t.owner) } }), `⚔ P${a} · ${name(t.owner)} · ${t.size}`);
          })));
      }
      if (friends.length) {
        out.push(h("div.subhead", `Move ${n} card${n === 1 ? "" : "s"} to`),
          h("div.target-list", friends.map((a) => {
            const t = view.provinces[a];
            return h("button.target-btn.move", {
              type: "button", disabled: !canAct, dataset: { move: a },
              on: { click: () => move(p, t) },
            }, `⇄ P${a} · ${t.size}/${view.max_garrison}`);
          })));
      }
      if (!turn && msg.status === "running") out.push(h("p.hint", "You can act when it is your turn."));
    } else if (me() !== null && !ctx.readOnly) {
      out.push(h("p.hint", "Jokers in other players' garrisons are never shown."));
    }
    return h("div.province-panel", out);
  }

  function howTo() {
    return h("details.how-to", h("summary", "How to play"),
      h("ul.small",
        h("li", "On your turn, select one of your provinces, choose cards of its garrison and attack an adjacent enemy province (each province attacks at most once a turn)."),
        h("li", "Duels: the top attacking card meets the top defending card; the smaller is destroyed, the winner loses a point and goes to the bottom. A joker beats anything and becomes the card it beat; equal values: " +
          (view.options.tie_rule === "defender_wins" ? "the defender wins." : "both are destroyed.")),
        h("li", "A side that has lost half of its cards is routed: a routed defender loses the province, a routed attacker goes home."),
        h("li", "Move cards between your adjacent provinces (at most 7 in a garrison); sort the garrison of a frontline province; a province that received cards this turn cannot attack or send cards."),
        h("li", "Ending your turn deals you one card per province, placed by your dealing mode. Last player with provinces wins, or the most provinces after the last round."),
        h("li", "Your jokers (★) are invisible to the others until they fight.")));
  }

  function shift(p, index, delta) {
    const order = draft ? [...draft] : p.garrison.map((c) => c.id);
    const j = index + delta;
    if (j < 0 || j >= order.length) return;
    [order[index], order[j]] = [order[j], order[index]];
    draft = order;
    render();
  }

  return {
    update,
    destroy() { boardRoot.replaceChildren(); panel.replaceChildren(); },
  };
}

/** One line per seat in the players panel. */
export function seatStats(view, seat) {
  const info = view.seats[seat];
  if (!info) return "";
  return `${info.provinces} provinces · ${info.cards} cards${info.alive ? "" : " · eliminated"}`;
}

/** Whose turn, round etc. for the header. */
export function phaseText(view) {
  if (view.phase === "over") return "match over";
  return `round ${view.round}/${view.options.max_rounds} · turn ${view.turn}`;
}

/** An event as log text (and an optional detail node). Returns null to skip. */
export function describe(ev, name) {
  switch (ev.type) {
    case "turn_started":
      return { text: `Turn ${ev.turn} (round ${ev.round}): ${name(ev.seat)}`, seat: ev.seat, kind: "turn" };
    case "turn_ended":
      return { text: `${name(ev.seat)} ended the turn`, seat: ev.seat, kind: "minor" };
    case "reinforced": {
      const n = ev.cards.length;
      const where = [...new Set(ev.cards.map((c) => `P${c.province}`))].join(", ");
      return { text: `${name(ev.seat)} was reinforced: ${n} card${n === 1 ? "" : "s"}${where ? " to " + where : ""}` +
        (ev.discarded ? ` (${ev.discarded} discarded, no room)` : ""), seat: ev.seat, kind: "minor" };
    }
    case "battle": {
      const result = ev.result === "conquered" ? "conquered it" : "was repelled";
      const detail = h("div.battle",
        h("div", "attacking: ", ev.attacking.map(cardText).join(" ") || "—", " · defending: ", ev.defending.map(cardText).join(" ") || "—"),
        ev.duels.map((d, i) => h("div.duel", `${i + 1}. ${cardText(d.attacker)} vs ${cardText(d.defender)} → ` +
          (d.winner === "none" ? "both destroyed" : `${d.winner} wins${d.card ? " (" + cardText(d.card) + ")" : ""}`))),
        ev.routed.length ? h("div", `routed: ${ev.routed.join(", ")}`) : null,
        ev.retreat ? h("div", `defenders retreat to P${ev.retreat.to ?? "—"}` +
          (ev.retreat.destroyed.length ? `, ${ev.retreat.destroyed.length} destroyed` : "")) : null);
      return {
        text: `${name(ev.seat)} attacked P${ev.to} (${name(ev.defender)}) from P${ev.from} with ${ev.attacking.length} — ${result}`,
        seat: ev.seat, kind: "battle", detail,
      };
    }
    case "moved":
      return { text: `${name(ev.seat)} moved ${ev.cards.length} card${ev.cards.length === 1 ? "" : "s"} P${ev.from} → P${ev.to}`, seat: ev.seat };
    case "sorted":
      return { text: `${name(ev.seat)} sorted P${ev.province}`, seat: ev.seat, kind: "minor" };
    case "dealing_mode_set":
      return { text: `${name(ev.seat)} set dealing to ${words(ev.mode)}`, seat: ev.seat, kind: "minor" };
    case "eliminated":
      return { text: `${name(ev.seat)} was eliminated`, seat: ev.seat, kind: "big" };
    case "match_over":
      return { text: `Match over (${words(ev.reason)})`, kind: "big" };
    default:
      return { text: `${words(ev.type)}`, kind: "minor" };
  }
}
