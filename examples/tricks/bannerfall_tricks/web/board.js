// Tricks board: the trump card, the trick on the table, the last trick, the tricks and the score,
// and your hand as buttons (the cards you may play now are enabled: click one to play it).
// Everything drawn comes from the server's view (tricks.md, "View"). The web client loads this
// module from the game's package (GET /api/v1/games lists its URL) and calls createBoard(ctx).
import { h, replace, seatColour, SUIT_SYMBOL, isRedSuit } from "/js/dom.js";

export const title = "Tricks";

function face(card, { label = null, trump = false } = {}) {
  return h("span.card.static", { class: [isRedSuit(card.suit) ? "red" : "", trump ? "trump" : ""].join(" "),
    dataset: { card: card.id }, title: `${card.rank} of ${card.suit}` },
  h("span.rank", card.rank), h("span.suit", SUIT_SYMBOL[card.suit] || ""),
  label ? h("span.small.muted", label) : null);
}

/** The board's own stylesheet (board.css beside this module, served from the game's web folder). */
function useStylesheet() {
  const href = new URL("./board.css", import.meta.url).href;
  if (document.querySelector(`link[href="${href}"]`)) return;
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = href;
  document.head.append(link);
}

/** ctx: {board, panel, seat, readOnly, admin, name(seat), act(action)}; returns {update(msg), destroy()}. */
export function createBoard(ctx) {
  useStylesheet();
  function render(msg) {
    const view = msg.view;
    const mine = msg.prompts.some((p) => p.seat === msg.seat && !p.submitted);
    const allowed = new Set(view.playable || []);
    const row = (label, cards) => h("div.tricks-row", h("strong", label),
      cards.length ? cards.map((c) => face(c, { label: ctx.name(c.seat) })) : h("span.muted", "—"));
    replace(ctx.board, h("div.tricks-board", { dataset: { board: "tricks" } },
      h("h3", `Hand ${view.hand_number} of ${view.hands_to_play}`),
      h("div.tricks-row", h("strong", "Trumps: "), face(view.trump, { trump: true }),
        h("span.muted", ` ${view.trump.suit}`)),
      row("On the table: ", view.table),
      row("Last trick: ", view.last_trick),
      h("ul.points", [0, 1].map((seat) => h("li",
        h("span.swatch", { style: { background: seatColour(seat) } }),
        ` ${ctx.name(seat)}: ${view.tricks[seat]} trick${view.tricks[seat] === 1 ? "" : "s"} this hand, `
        + `${view.score[seat]} in all, ${view.hand_sizes[seat]} card${view.hand_sizes[seat] === 1 ? "" : "s"} in hand`)))));
    const hand = view.hand || [];
    replace(ctx.panel,
      h("h3", "Your hand"),
      ctx.readOnly ? h("p.muted", "You are watching.") : h("div.hand", hand.map((c) => h("button.card", {
        type: "button", class: isRedSuit(c.suit) ? "red" : "", disabled: !mine || !allowed.has(c.id),
        dataset: { play: c.id }, title: `${c.rank} of ${c.suit}`,
        on: { click: () => ctx.act({ type: "play", card: c.id }).catch(() => {}) },
      }, h("span.rank", c.rank), h("span.suit", SUIT_SYMBOL[c.suit] || "")))),
      mine && view.table.length && allowed.size < hand.length
        ? h("p.hint", `Follow suit: play ${view.table[0].suit}.`) : null,
      h("details.how-to", h("summary", "How to play"), h("ul.small",
        h("li", "Two players, 6 cards each from a 24-card deck (9 to ace); the card turned up sets trumps."),
        h("li", "The leader plays any card; the other must follow suit if they can, else may play any card."),
        h("li", "The highest trump wins the trick, else the highest card of the suit led; the winner leads next."),
        h("li", "Six tricks a hand; after the last hand, the most tricks win. You have 30 seconds a turn."))));
  }
  return {
    update: render,
    destroy() { ctx.board.replaceChildren(); ctx.panel.replaceChildren(); },
  };
}

/** A short line for the players panel. */
export function seatStats(view, seat) {
  const n = view.score[seat];
  return `${n} trick${n === 1 ? "" : "s"}`;
}

/** The phase line of the match head. */
export function phaseText(view) {
  return view.phase === "over" ? "over" : `hand ${view.hand_number}/${view.hands_to_play}, trumps ${view.trump.suit}`;
}
