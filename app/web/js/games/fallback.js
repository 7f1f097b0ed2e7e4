// A board for a game without its own renderer: the view as the server sent it.
import { h, replace, words } from "../dom.js";

export const title = "";

export function createBoard(ctx) {
  return {
    update(msg) {
      replace(ctx.board, h("pre.raw-view", JSON.stringify(msg.view, null, 2)));
      replace(ctx.panel, h("p.muted", "This game has no board view yet; the raw view is shown."));
    },
    destroy() { ctx.board.replaceChildren(); ctx.panel.replaceChildren(); },
  };
}

export function describe(ev) {
  const { v, type, ...rest } = ev;
  const text = Object.entries(rest).filter(([, x]) => typeof x !== "object" || x === null)
    .map(([k, x]) => `${words(k)} ${x}`).join(", ");
  return { text: `${words(type)}${text ? ": " + text : ""}`, seat: ev.seat, kind: "minor" };
}
