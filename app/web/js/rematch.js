// The end-of-match rematch offer (docs/protocol.md, "Rematch"): "Rematch" agrees, "No thanks"
// declines; the line says who is still to answer and how long the offer lasts. It long-polls
// GET /matches/{id}/rematch?wait=25&state=… (one request at a time) and opens the new match when
// every player agreed. Leaving the page (another page, or closing the tab) declines: nobody waits
// for a player who went away.
import { api, ApiError, savedPlayer } from "./api.js";
import { h, replace } from "./dom.js";

function errorText(exc) {
  return exc instanceof ApiError ? `${exc.message} (${exc.code})` : String(exc?.message || exc);
}

/** The rematch panel of ended match ``matchId``: ``{el, stop}``. */
export function rematchPanel(matchId) {
  const me = savedPlayer();
  let stopped = false;
  let offer = null;
  const status = h("span#rematch-status.muted");
  const go = h("button#rematch-go.primary", { type: "button", on: { click: () => send("POST") } }, "Rematch");
  const no = h("button#rematch-decline", { type: "button", on: { click: () => send("DELETE") } }, "No thanks");
  const open = h("a.button#rematch-open", { hidden: true }, "Open the rematch");
  const el = h("div#rematch.row", go, no, open, status);

  async function send(method) {
    go.disabled = no.disabled = true;
    try {
      show(await api(method, `/matches/${matchId}/rematch`));
    } catch (exc) {
      replace(status, h("span.error", errorText(exc)));
    } finally {
      go.disabled = no.disabled = false;
    }
  }

  const names = (ids) => offer.players.filter((p) => ids.includes(p.id)).map((p) => p.name || "a player").join(", ");

  function render() {
    if (!offer) return;
    const mine = offer.agreed.includes(me.player.id);
    const left = Math.max(0, Math.ceil(offer.expires_at - Date.now() / 1000));
    const pending = offer.players.map((p) => p.id).filter((id) => !offer.agreed.includes(id));
    go.hidden = no.hidden = offer.status !== "open";
    go.hidden = go.hidden || mine;
    open.hidden = !(offer.status === "started" && offer.new_match_id);
    if (!open.hidden) open.href = `#/match/${offer.new_match_id}`;
    el.dataset.status = offer.status;
    if (offer.status === "open") {
      if (left <= 0) status.textContent = "The rematch offer has expired.";
      else if (mine) status.textContent = `Rematch asked — waiting for ${names(pending)} (${left} s)`;
      else if (offer.agreed.length) status.textContent = `${names(offer.agreed)} want${offer.agreed.length > 1 ? "" : "s"} a rematch (${left} s)`;
      else status.textContent = `Same players, same options: ${left} s to ask for a rematch.`;
    } else if (offer.status === "starting") {
      status.textContent = "Everyone agreed — starting the rematch…";
    } else if (offer.status === "started") {
      status.textContent = "The rematch has started.";
    } else if (offer.status === "cancelled") {
      status.textContent = offer.declined_by ? `No rematch: ${names([offer.declined_by])} declined or left.` : "No rematch: it could not start.";
    } else {
      status.textContent = "The rematch offer has expired.";
    }
  }

  function show(o) {
    offer = o;
    render();
    if (o.status === "started" && o.new_match_id && o.agreed.includes(me.player.id)) {
      location.hash = `#/match/${o.new_match_id}`;
      return true;
    }
    return false;
  }

  async function poll() {
    let state = null;
    while (!stopped) {
      let o;
      try {
        o = await api("GET", `/matches/${matchId}/rematch${state ? `?wait=25&state=${encodeURIComponent(state)}` : ""}`);
      } catch (exc) {
        if (stopped) return;
        replace(status, h("span.error", errorText(exc)));
        if (exc.status === 403 || exc.status === 404) { go.hidden = no.hidden = true; return; }
        await new Promise((r) => setTimeout(r, 2000));
        continue;
      }
      if (stopped || show(o)) return;
      if (!["open", "starting"].includes(o.status)) return;  // final: nothing more will change
      state = o.state;
    }
  }

  // leaving while the offer is open declines it (keepalive: the request outlives a closed tab)
  function declineOnLeave() {
    if (!offer || offer.status !== "open") return;
    fetch(`/api/v1/matches/${matchId}/rematch`, { method: "DELETE", keepalive: true,
      headers: { Authorization: `Bearer ${me.token}` } }).catch(() => null);
  }
  window.addEventListener("pagehide", declineOnLeave);
  const ticker = setInterval(render, 1000);
  poll();
  return {
    el,
    stop() {
      stopped = true;
      clearInterval(ticker);
      window.removeEventListener("pagehide", declineOnLeave);
      declineOnLeave();
    },
  };
}
