// Warrior board: every player's nations (creatures with their symbols, wizards), siege engines,
// attack cards and victory piles; the attack being fought with its dice; and the controls of each
// decision: keep (and where attack cards and wizards go), place wizards, siege shots, target,
// losses, go on / stop, knights' re-attack. Only what the server's view holds is drawn.
import { h, replace, seatColour, words } from "/js/dom.js";

export const title = "Warrior";

const SYMBOL = { infantry: "⚔", archer: "➹", knight: "♞" };
const RACE_COLOUR = {
  dwarves: "#c98b4e", goblins: "#7fbf3f", barbarians: "#d85a3e", undead: "#9a93b8", elves: "#4fc3d9", trolls: "#8a9a45",
};
const cap = (text) => String(text ?? "").replace(/^./, (c) => c.toUpperCase());

function symbolsText(symbols) {
  return Object.entries(symbols || {}).filter(([, n]) => n).map(([k, n]) => (SYMBOL[k] || k).repeat(n)).join("");
}

/** Short text for a card face. */
export function faceText(c) {
  if (!c) return "?";
  if (c.kind === "creature") return `${cap(c.race)} ${symbolsText(c.symbols)}`;
  if (c.kind === "attack") return c.attack === "mercenary" ? `attack #${c.number} (mercenaries ×${c.mercenaries})` : `attack #${c.number} ${symbolsText(c.symbols)}`;
  if (c.kind === "wizard") return "wizard";
  if (c.kind === "siege_engine") return "siege engine";
  return words(c.kind);
}

/** A card as an element. */
export function wcard(c, { onClick = null, chosen = false, faceDown = false, small = false, extra = null } = {}) {
  const race = c.kind === "creature" ? c.race : null;
  const glyph = c.kind === "creature" ? symbolsText(c.symbols) || "·"
    : c.kind === "attack" ? `#${c.number}` : c.kind === "wizard" ? "✦" : c.kind === "siege_engine" ? "⚙" : "?";
  const label = c.kind === "creature" ? cap(race) : c.kind === "attack"
    ? (c.attack === "mercenary" ? `merc ×${c.mercenaries}` : symbolsText(c.symbols) || "nation") : words(c.kind);
  return h(onClick ? "button" : "span", {
    class: ["wcard", `k-${c.kind}`, chosen ? "chosen" : "", faceDown || c.face_up === false ? "face-down" : "",
      c.hidden ? "hidden-card" : "", small ? "small" : "", onClick ? "" : "static"].join(" "),
    type: onClick ? "button" : undefined,
    dataset: c.id ? { card: c.id } : undefined,
    style: race ? { borderTopColor: RACE_COLOUR[race] || "#888" } : undefined,
    title: faceText(c) + (c.face_up === false ? " (face down: occupying)" : "") + (c.hidden ? " — hidden from the players" : ""),
    on: onClick ? { click: onClick } : undefined,
  }, h("span.glyph", glyph), small ? null : h("span.label", label), extra);
}

function die(value, bonus) {
  return h("span.die", { class: bonus ? "bonus" : "", title: bonus ? "with the archers' +1" : "" }, String(value));
}

export function createBoard(ctx) {
  const { board: boardRoot, panel } = ctx;
  let msg = null;
  let view = null;
  let phaseKey = null;
  let picked = new Set(); // keep / lose / mercenary force
  let attackNation = {}; // keep: attack card id -> race ("" = default)
  let wizardNation = {}; // keep / place_wizards: wizard id -> race
  let shots = {}; // siege: engine id -> target id
  let busy = false;

  const mats = h("div.mats");
  const fight = h("div.fight");
  replace(boardRoot, fight, mats);

  const me = () => ctx.seat;
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

  function cardIndex() {
    const index = new Map();
    for (const st of view.seats) {
      for (const n of st.nations) {
        for (const c of n.cards) index.set(c.id, { ...c, seat: st.seat });
        if (n.wizard) index.set(n.wizard.id, { ...n.wizard, seat: st.seat, nation: n.race });
      }
      for (const e of st.engines) index.set(e.id, { ...e, seat: st.seat });
    }
    for (const c of view.decision?.hand || []) index.set(c.id, { ...c, seat: me() });
    return index;
  }

  function resetChoices() {
    const d = view.decision;
    picked = new Set();
    attackNation = {};
    wizardNation = {};
    shots = {};
    if (d?.kind === "keep" && d.submission) {
      picked = new Set(d.submission.cards);
      for (const [id, race] of Object.entries(d.submission.attacks || {})) attackNation[id] = race ?? "";
      for (const [id, race] of Object.entries(d.submission.wizards || {})) wizardNation[id] = race ?? "";
    } else if (d?.kind === "place_wizards" && d.submission) {
      for (const [id, race] of Object.entries(d.submission)) wizardNation[id] = race ?? "";
    } else if (d?.kind === "lose" && d.submission) {
      picked = new Set(d.submission);
    } else if (d?.kind === "siege" && d.submission) {
      for (const shot of d.submission) shots[shot.engine] = shot.target;
    }
  }

  /** Drop choices that the new view no longer allows: a card that was destroyed or changed
   *  hands, a nation that is gone, a target that left the list. */
  function pruneChoices() {
    const d = view.decision;
    if (!d) {
      picked = new Set();
      attackNation = {};
      wizardNation = {};
      shots = {};
      return;
    }
    const allowed = new Set(
      d.kind === "keep" ? (d.hand || []).map((c) => c.id)
        : d.kind === "lose" ? d.candidates || []
          : d.kind === "target" ? d.force_candidates || [] : []);
    picked = new Set([...picked].filter((id) => allowed.has(id)));
    if (d.kind === "siege") {
      const engines = new Set(d.engines || []);
      const targets = new Set(d.targets || []);
      shots = Object.fromEntries(Object.entries(shots).filter(([engine, target]) => engines.has(engine) && targets.has(target)));
    }
    if (d.kind === "place_wizards") {
      const wizards = new Set((d.wizards || []).map((w) => w.id));
      const nations = new Set(d.nations || []);
      wizardNation = Object.fromEntries(Object.entries(wizardNation).filter(([id, race]) => wizards.has(id) && (!race || nations.has(race))));
    }
  }

  function update(message) {
    msg = message;
    view = message.view;
    const key = `${view.phase_id}:${view.phase}`;
    if (key !== phaseKey) {
      phaseKey = key;
      resetChoices();
    } else {
      pruneChoices();
    }
    render();
  }

  function render() {
    if (!view) return;
    renderFight();
    renderMats();
    renderPanel();
  }

  // ----------------------------------------------------------------------------- the table
  function renderMats() {
    const order = [...view.seats.keys()];
    if (me() !== null) order.sort((a, b) => (a === me() ? -1 : b === me() ? 1 : a - b));
    const atk = view.attack;
    replace(mats, order.map((seat) => {
      const st = view.seats[seat];
      const creatures = st.nations.reduce((n, x) => n + x.size, 0);
      return h("section.mat", { dataset: { seat }, class: seat === me() ? "mine" : "", style: { borderLeftColor: seatColour(seat) } },
        h("div.mat-head",
          h("span.swatch", { style: { background: seatColour(seat) } }),
          h("strong", name(seat)), seat === me() ? h("span.tag.you", "you") : null,
          ctx.bots && ctx.bots[seat] ? h("span.tag", { title: `${ctx.bots[seat]} bot` }, "bot") : null,
          h("span.muted.small", ` ${creatures} creatures · victory pile ${st.victory_pile}`),
          st.engines.length ? h("span.engines", { title: "siege engines" }, st.engines.map((e) => wcard(e, { small: true }))) : null,
          st.attack_cards.length ? h("span.attack-cards", st.attack_cards.map((c) =>
            h("span.atk-chip", { title: faceText(c) + (c.nation ? ` — in front of the ${c.nation}` : "") },
              `#${c.number}${c.nation ? " " + cap(c.nation).slice(0, 3) : c.attack === "mercenary" ? " merc" : ""}`))) : null,
          view.phase === "keep" || view.phase === "place_wizards" ? h("span.small.muted", st.submitted ? " · ✓ chosen" : st.hand_size ? ` · choosing from ${st.hand_size}` : "") : null),
        h("div.nations", st.nations.length ? st.nations.map((n) => {
          const attacking = atk && atk.seat === seat && (atk.nation === n.race || atk.force.some((c) => c.race === n.race && n.cards.some((x) => x.id === c.id)));
          const targeted = atk?.target && atk.target.seat === seat && atk.target.race === n.race;
          return h("div.nation", {
            dataset: { race: n.race, seat }, class: [attacking ? "attacking" : "", targeted ? "targeted" : "", n.wizard ? "protected" : ""].join(" "),
            style: { borderTopColor: RACE_COLOUR[n.race] || "#888" },
          },
          h("div.nation-head", h("strong", cap(n.race)), h("span.count", String(n.size)),
            n.wizard ? h("span.wizard", { title: "protected by a wizard: cannot attack or be attacked" }, "✦") : null),
          h("div.sym", symbolsText({ infantry: n.symbols.infantry, archer: n.symbols.archer, knight: n.symbols.knight }) || "—"),
          h("div.cards", n.cards.map((c) => wcard(c, { small: true }))));
        }) : h("span.muted.small", "no creatures")));
    }));
  }

  const STEPS = [
    ["keep", "Keep cards"], ["place_wizards", "Place wizards"], ["attacks", "Attacks, by card number"], ["round_end", "Round ends"],
  ];
  const ATTACK_PHASES = new Set(["siege", "target", "lose", "continue", "reattack"]);

  /** One sentence: what is happening now and who must act. */
  function nowText() {
    const atk = view.attack;
    const waiting = msg.prompts.filter((p) => !p.submitted).map((p) => (p.seat === me() ? "you" : name(p.seat)));
    const who = waiting.length ? ` Waiting for ${waiting.join(", ")}.` : "";
    const attacker = atk ? (atk.seat === me() ? "You attack" : `${name(atk.seat)} attacks`) : "";
    switch (view.phase) {
      case "keep": return `Everyone picks the cards to keep from the 7 dealt; the rest are discarded.${who}`;
      case "place_wizards": return `Wizards go on a nation: it can then neither attack nor be attacked.${who}`;
      case "siege": return `Before the attack, siege engines may fire at any card: a 4 or more destroys it.${who}`;
      case "target": return `${attacker} with card #${atk?.card?.number ?? "?"}: choosing which nation to hit.${who}`;
      case "lose": return `Dice rolled: the losing side picks which creatures are destroyed.${who}`;
      case "continue": return `${attacker}: after each exchange the attacker may roll again or stop.${who}`;
      case "reattack": return `${attacker}: knights left in the force may attack again (one card stays face down).${who}`;
      case "over": return "The match is over: majorities and victory piles are scored.";
      default: return who.trim();
    }
  }

  function guide() {
    const current = view.phase === "over" ? null : ATTACK_PHASES.has(view.phase) ? "attacks" : view.phase;
    return h("div.w-guide#warrior-guide",
      h("ol.w-steps", { "aria-label": `round ${view.round} of 3` },
        h("li.w-round", `Round ${view.round}/3`),
        STEPS.map(([key, label]) => h("li", { class: key === current ? "now" : "", dataset: { step: key } }, label))),
      h("p.w-now", nowText()),
      h("p.w-legend.small.muted",
        "⚔ infantry: 1 die each (3 at most) · ➹ archers: more than the other side adds +1 to the best die · ♞ knights: may attack again · ",
        "✦ wizard: the nation is protected · ⚙ siege engine · destroyed cards: 2 points to whoever destroyed them"));
  }

  function renderFight() {
    const atk = view.attack;
    const parts = [guide()];
    if (view.attack_order.length) {
      parts.push(h("div.order", h("span.muted.small", "Attack order: "), view.attack_order.map((a) =>
        h("span.atk-chip", { style: { borderColor: seatColour(a.seat) }, title: name(a.seat) }, `#${a.number}`))));
    }
    if (atk) {
      const ex = atk.last_exchange;
      parts.push(h("div.attack-box",
        h("div.attack-title", h("span.swatch", { style: { background: seatColour(atk.seat) } }),
          h("strong", name(atk.seat)), ` attacks with #${atk.card.number} (${atk.kind})`,
          atk.nation ? ` — the ${cap(atk.nation)}` : "",
          atk.target ? [" → ", h("span.swatch", { style: { background: seatColour(atk.target.seat) } }), h("strong", `${name(atk.target.seat)}'s ${cap(atk.target.race)}`)] : h("span.muted", " · choosing a target"),
          atk.reattacks ? h("span.tag", `re-attack ${atk.reattacks}`) : null),
        atk.force.length || atk.face_down.length ? h("div.force", h("span.muted.small", `force ${symbolsText(atk.force_symbols)}: `),
          atk.force.map((c) => wcard(c, { small: true })), atk.face_down.map((c) => wcard(c, { small: true, faceDown: true }))) : null,
        ex ? h("div.dice-row",
          h("span.small", `exchange ${atk.exchanges}: `),
          h("span.dice", ex.attacker_dice.map((v, i) => die(v, i === 0 && ex.attacker_bonus))),
          h("span.vs", "vs"),
          h("span.dice.def", ex.defender_dice.map((v, i) => die(v, i === 0 && ex.defender_bonus))),
          h("span.small", ` → attacker loses ${ex.attacker_losses}, defender loses ${ex.defender_losses}`)) : null));
    } else if (view.phase === "over") {
      parts.push(finalScores());
    }
    if (view.last_siege.length) {
      parts.push(h("div.small.muted", "Last siege: " + view.last_siege.map((x) =>
        `${name(x.seat)} shot ${faceText(x.target)} of ${x.target_seat === null ? "?" : name(x.target_seat)}: rolled ${x.roll}, ${x.hit ? "destroyed" : "missed"}`).join("; ")));
    }
    parts.push(h("div.small.muted", `Round ${view.round} of 3 · pile ${view.pile_size} · face-up discards ${view.discards.length}`));
    replace(fight, parts);
  }

  function finalScores() {
    return h("div.attack-box",
      h("strong", "Final scoring"),
      h("table.list.small", h("thead", h("tr", h("th", "Race"), h("th", "Points"), h("th", "Most creatures"))),
        h("tbody", (view.majorities || []).map((m) => h("tr",
          h("td", cap(m.race)), h("td", String(m.points)),
          h("td", m.seats.length ? m.seats.map(name).join(", ") + ` (${m.creatures})` : "nobody"))))));
  }

  // ----------------------------------------------------------------------------- controls
  function renderPanel() {
    const d = view.decision;
    const out = [];
    const mine = msg.status === "running" && me() !== null && msg.prompts.some((p) => p.seat === me() && !ctx.readOnly);
    if (ctx.admin && view.hands && view.hands.some((hand) => hand.length)) {
      const hands = view.hands.map((hand, seat) => hand.length ? h("div.pool", h("span.small", `${name(seat)}: `), hand.map((c) => wcard(c, { small: true }))) : null);
      out.push(h("div.subhead", "Hands (private)"), hands);
    }
    if (ctx.admin && view.pile) out.push(h("div.small.muted", `Pile: ${view.pile.length} cards`));
    if (!d || !mine) {
      if (!ctx.readOnly && view.phase !== "over") out.push(h("p.hint", "Nothing for you to decide now."));
      out.push(racesTable());
      replace(panel, out);
      return;
    }
    out.push(decisionControls(d));
    out.push(racesTable());
    replace(panel, out);
  }

  function racesTable() {
    const help = ctx.admin ? null : h("details.how-to", h("summary", "How to play"), h("ul.small",
      h("li", "Three rounds. Each round you are dealt 7 cards and keep 4 (5 in the last round): creatures join your nations, wizards protect a nation, siege engines and attack cards lie in front of you."),
      h("li", "Attack cards are played in number order. A nation attack hits a nation of the same race or its natural enemy; mercenaries (3 or 4 of your creatures) hit any unprotected nation."),
      h("li", "Exchanges: the attacker rolls one die per ⚔ infantry (up to 3), the defender up to 2; more ➹ archers add 1 to the highest die. Highest dice are compared in pairs; ties go to the defender."),
      h("li", "Every destroyed card goes to the victory pile of whoever destroyed it (2 points each). With a ♞ knight left you may attack again, leaving a card behind face down."),
      h("li", "At the end, the most creatures of a race scores its majority points.")));
    return [help, h("details.races", h("summary", "Races and majority points"),
      h("table.list.small", h("tbody", view.races.map((r) => h("tr",
        h("td", h("span.swatch", { style: { background: RACE_COLOUR[r.race] || "#888" } }), cap(r.race)),
        h("td.muted", `enemy ${cap(r.enemy)}`), h("td", `${r.majority_points} pts`))))))];
  }

  function toggle(id, limit) {
    if (picked.has(id)) picked.delete(id);
    else if (picked.size < limit) picked.add(id);
    render();
  }

  function myNationsAfterKeep(hand) {
    const races = new Set(view.seats[me()].nations.map((n) => n.race));
    for (const c of hand) if (picked.has(c.id) && c.kind === "creature") races.add(c.race);
    return [...races];
  }

  function decisionControls(d) {
    const disabled = busy;
    const index = cardIndex();
    switch (d.kind) {
      case "keep": {
        const nations = myNationsAfterKeep(d.hand);
        const kept = d.hand.filter((c) => picked.has(c.id));
        return h("div.phase-box",
          h("div.subhead", `Keep ${d.keep} of the ${d.hand.length} cards dealt`),
          h("p.small.muted", "The rest go to the face-up discards. Choices are revealed together when everyone has chosen."),
          h("div.pool#hand", d.hand.map((c) => wcard(c, { chosen: picked.has(c.id), onClick: disabled ? null : () => toggle(c.id, d.keep) }))),
          kept.filter((c) => c.kind === "attack" && c.attack === "nation").map((c) => h("label.option",
            h("span", `#${c.number} lies in front of`),
            h("select", { dataset: { attackCard: c.id }, on: { change: (e) => { attackNation[c.id] = e.target.value; } } },
              h("option", { value: "" }, "my largest nation"),
              nations.map((r) => h("option", { value: r, selected: attackNation[c.id] === r }, cap(r)))))),
          kept.filter((c) => c.kind === "wizard").map((c) => h("label.option",
            h("span", "wizard protects"),
            h("select", { dataset: { wizardCard: c.id }, on: { change: (e) => { wizardNation[c.id] = e.target.value; } } },
              h("option", { value: "" }, "my largest unprotected"),
              nations.map((r) => h("option", { value: r, selected: wizardNation[c.id] === r }, cap(r)))))),
          h("button#submit-keep.primary", {
            type: "button", disabled: disabled || picked.size !== d.keep,
            on: { click: () => {
              const ids = d.hand.filter((c) => picked.has(c.id)).map((c) => c.id);
              const attacks = Object.fromEntries(Object.entries(attackNation).filter(([id, r]) => r && picked.has(id)));
              const wizards = Object.fromEntries(Object.entries(wizardNation).filter(([id, r]) => r && picked.has(id)));
              act({ type: "keep", cards: ids, attacks, wizards });
            } },
          }, `Keep ${picked.size}/${d.keep}`),
          d.submission ? h("p.small.ok", "✓ Chosen — you may change it until everyone has chosen.") : null);
      }
      case "place_wizards":
        return h("div.phase-box",
          h("div.subhead", "Place your wizards"),
          h("p.small.muted", "A nation with a wizard can neither attack nor be attacked."),
          d.wizards.map((w) => h("label.option", wcard(w, { small: true }),
            h("select", { dataset: { wizardCard: w.id }, on: { change: (e) => { wizardNation[w.id] = e.target.value; } } },
              h("option", { value: "" }, "my largest unprotected"),
              d.nations.map((r) => h("option", { value: r, selected: wizardNation[w.id] === r }, cap(r)))))),
          h("button#submit-wizards.primary", { type: "button", disabled, on: { click: () =>
            act({ type: "place_wizards", wizards: Object.fromEntries(Object.entries(wizardNation).filter(([, r]) => r)) }) } }, "Place wizards"),
          d.submission ? h("p.small.ok", "✓ Submitted") : null);
      case "siege":
        return h("div.phase-box",
          h("div.subhead", "Siege window"),
          h("p.small.muted", "Fire an engine at a card: 4 or more on one die destroys it. Or hold your engines."),
          d.engines.map((engine) => h("label.option", h("span", "⚙ engine"),
            h("select", { dataset: { engine }, on: { change: (e) => { shots[engine] = e.target.value; } } },
              h("option", { value: "" }, "hold"),
              d.targets.map((t) => {
                const c = index.get(t);
                return h("option", { value: t, selected: shots[engine] === t }, c ? `${name(c.seat)}: ${faceText(c)}${c.nation ? " on " + cap(c.nation) : ""}` : t);
              })))),
          h("button#submit-siege.primary", { type: "button", disabled, on: { click: () =>
            act({ type: "siege", shots: Object.entries(shots).filter(([, t]) => t).map(([engine, target]) => ({ engine, target })) }) } }, "Fire / hold"),
          d.submission ? h("p.small.ok", "✓ Submitted") : null);
      case "target": {
        const merc = d.force_size > 0;
        const mine = view.seats[me()];
        const candidates = new Set(d.force_candidates);
        return h("div.phase-box",
          h("div.subhead", "Choose the target"),
          merc ? [h("p.small.muted", `Mercenaries: pick ${d.force_size} of your creatures (${picked.size}/${d.force_size}), then a target.`),
            h("div.pool#force", mine.nations.flatMap((n) => n.cards).filter((c) => candidates.has(c.id))
              .map((c) => wcard(c, { chosen: picked.has(c.id), onClick: disabled ? null : () => toggle(c.id, d.force_size) })))] : null,
          d.options.map((o) => h("div.target-group",
            h("div.small.muted", o.nation ? `with the ${cap(o.nation)}` : "with the mercenaries"),
            h("div.target-list", o.targets.map((t) => h("button.target-btn.attack", {
              type: "button", dataset: { targetSeat: t.seat, targetRace: t.race },
              disabled: disabled || (merc && picked.size !== d.force_size),
              on: { click: () => {
                const action = { type: "target", target: { seat: t.seat, race: t.race } };
                if (o.nation) action.nation = o.nation;
                if (merc) action.force = [...picked];
                act(action);
              } },
            }, h("span.swatch", { style: { background: seatColour(t.seat) } }), `${name(t.seat)}'s ${cap(t.race)} (${t.size})`))))));
      }
      case "lose":
        return h("div.phase-box",
          h("div.subhead", `Lose ${d.count} card${d.count === 1 ? "" : "s"}`),
          h("p.small.muted", "Choose which of your creatures are destroyed; they go to the winner's victory pile."),
          h("div.pool#lose", d.candidates.map((id) => {
            const c = index.get(id) || { id, kind: "creature" };
            return wcard(c, { chosen: picked.has(id), onClick: disabled ? null : () => toggle(id, d.count) });
          })),
          h("button#submit-lose.primary", { type: "button", disabled: disabled || picked.size !== d.count,
            on: { click: () => act({ type: "lose", cards: [...picked] }) } }, `Lose ${picked.size}/${d.count}`));
      case "continue":
        return h("div.phase-box",
          h("div.subhead", "Go on or stop?"),
          h("div.row",
            h("button#go-on.primary", { type: "button", disabled, on: { click: () => act({ type: "go_on" }) } }, "Go on: another exchange"),
            h("button#stop-attack", { type: "button", disabled, on: { click: () => act({ type: "stop" }) } }, "Stop")));
      case "reattack":
        return h("div.phase-box",
          h("div.subhead", "Knights: attack again?"),
          h("p.small.muted", "Turn one card of the force face down (it stays to occupy) and attack again, or end the attack."),
          h("div.pool#reattack", d.candidates.map((id) => {
            const c = index.get(id) || { id, kind: "creature" };
            return wcard(c, { onClick: disabled ? null : () => act({ type: "reattack", face_down: id }) });
          })),
          h("button#end-attack", { type: "button", disabled, on: { click: () => act({ type: "end_attack" }) } }, "End the attack"));
      default:
        return h("p.muted", `Decision: ${words(d.kind)}`);
    }
  }

  return {
    update,
    destroy() { boardRoot.replaceChildren(); panel.replaceChildren(); },
  };
}

export function seatStats(view, seat) {
  const st = view.seats[seat];
  if (!st) return "";
  const creatures = st.nations.reduce((n, x) => n + x.size, 0);
  return `${creatures} creatures · pile ${st.victory_pile}${view.scores ? ` · ${view.scores[seat]} pts` : ""}`;
}

export function phaseText(view) {
  if (view.phase === "over") return "match over";
  return `round ${view.round}/3 · ${words(view.phase)}`;
}

/** The detail of an event line in the log (its words come from /events.json, shared with the CLI). */
export function describe(ev) {
  switch (ev.type) {
    case "kept":
      return { detail: h("div.battle", h("div", "kept: " + ev.kept.map(faceText).join(", ")), h("div", "discarded: " + (ev.discarded.map(faceText).join(", ") || "—"))) };
    case "exchange":
      return { detail: h("div.battle", `rolls ${ev.attacker_rolls.join(" ")}${ev.attacker_bonus ? " (+1 archers)" : ""} vs ${ev.defender_rolls.join(" ")}${ev.defender_bonus ? " (+1 archers)" : ""}`) };
    default:
      return null;
  }
}
