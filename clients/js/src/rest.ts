// The REST API under /api/v1 (docs/protocol.md, "REST"): sign-in, lobbies, quick play, parties,
// rematches. Every non-2xx answer throws ApiError with the server's code. Reads, and writes sent
// with an Idempotency-Key, are retried on 503 storage_busy/storage_unavailable after Retry-After.
import { ApiError } from "./errors.js";
import { ServerClock, serverClock } from "./clock.js";
import { MatchConnection, type ConnectionOptions } from "./connection.js";
import type { Games, GameId } from "./generated/games.js";

export interface Player { id: string; name: string; role: string }
export interface Seat { seat: number; player: Player | null; bot: string | null; username: string | null; loadout: string[] | null }
export interface Lobby {
  id: string; game: string; options: Record<string, unknown>; seat_count: number; host_id: string;
  status: "open" | "started" | "closed"; match_id: string | null; seats: Seat[]; created_at: number;
  rated?: boolean;
  /** Changes whenever the lobby changes (a server with the lobby long-poll; else absent). */
  state?: string;
}
export interface Ticket {
  id: string; game: string; seats: number; options: Record<string, unknown>;
  status: "waiting" | "claimed" | "matched" | "cancelled"; created_at: number; waited_seconds: number;
  rating: number; window: number; bots_after_seconds: number | null; match_id: string | null;
  lobby_id: string | null; party_id?: string | null; members?: string[];
}
export interface Party {
  id: string; game: string; seats: number; options: Record<string, unknown>; leader: string;
  members: Player[]; status: "open" | "queued"; invite_code: string | null; invite_path: string | null;
  invite_expires_at: number | null; ticket: Ticket | null; state: string; created_at: number;
}
export interface Rematch {
  match_id: string; status: "open" | "starting" | "started" | "cancelled" | "expired"; players: string[];
  agreed: string[]; expires_at: number; seconds_left: number; new_match_id: string | null;
  declined_by: string | null; state: string;
}
export interface Match {
  id: string; game: string; status: "running" | "finished" | "aborted"; options: Record<string, unknown>;
  seats: Array<{ seat: number; player_id: string | null; name: string | null; bot: string | null }>;
  seed_hash: string; seed: string | null; outcome: Record<string, unknown> | null; created_at: number;
  ended_at: number | null; version: number | null; rules_version?: number;
}
export interface GameInfo {
  id: string; title: string; min_seats: number; max_seats: number; options_schema: Record<string, unknown>;
  bot_kinds: string[]; phases: string[]; action_types: string[]; board: string | null; schema_url: string;
  [k: string]: unknown;
}
export interface Page<T> { items: T[]; next_cursor: string | null }

export interface ClientOptions {
  /** `http(s)://host[:port]`; in a page, "" or left out: the page's own origin. */
  baseUrl?: string;
  /** The bearer token (from {@link Client.guest}, {@link Client.signIn}, or kept from before). */
  token?: string | null;
  /** The fetch to use (default: the global one, in browsers and node ≥ 18). */
  fetch?: typeof fetch;
  clock?: ServerClock;
  /** Retries of a 503 `storage_busy`/`storage_unavailable` (reads and idempotent writes); default 3. */
  retries?: number;
}

type Query = Record<string, string | number | boolean | null | undefined>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function uuid(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  return "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx".replace(/[xy]/g, (ch) => {
    const r = (Math.random() * 16) | 0;
    return (ch === "x" ? r : (r & 0x3) | 0x8).toString(16);
  });
}

/** A client of one server, signed in as one player (or not yet: then only sign-in works). */
export class Client {
  readonly baseUrl: string;
  token: string | null;
  /** The signed-in player, when known (set by guest, signIn and me). */
  player: Player | null = null;
  readonly clock: ServerClock;
  private readonly fetchImpl: typeof fetch;
  private readonly retries: number;

  constructor({ baseUrl = "", token = null, fetch: f, clock, retries = 3 }: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = token;
    this.fetchImpl = f ?? globalThis.fetch.bind(globalThis);
    this.clock = clock ?? serverClock;
    this.retries = retries;
  }

  /** A new guest player (`POST /players`): a client holding its token. */
  static async guest(baseUrl = "", name?: string, options: Omit<ClientOptions, "baseUrl" | "token"> = {}): Promise<Client> {
    const client = new Client({ ...options, baseUrl });
    const out = await client.request<{ player: Player; token: string }>("POST", "/players", name === undefined ? {} : { name });
    client.token = out.token;
    client.player = out.player;
    return client;
  }

  /** Sign in to an account (`POST /accounts/sign-in`): a client holding the new token of this device. */
  static async signIn(baseUrl: string, username: string, password: string, label?: string,
    options: Omit<ClientOptions, "baseUrl" | "token"> = {}): Promise<Client> {
    const client = new Client({ ...options, baseUrl });
    const body: Record<string, string> = { username, password };
    if (label !== undefined) body.label = label;
    const out = await client.request<{ player: Player; token: string; username: string }>("POST", "/accounts/sign-in", body);
    client.token = out.token;
    client.player = out.player;
    return client;
  }

  /**
   * One REST call: `path` under `/api/v1`, `body` sent as JSON. Resolves with the decoded answer
   * (null for 204); throws {@link ApiError}. `idempotencyKey`: sent as `Idempotency-Key`, which also
   * makes a 503 safe to retry.
   */
  async request<T = unknown>(method: string, path: string, body?: unknown,
    { query, idempotencyKey, signal }: { query?: Query; idempotencyKey?: string; signal?: AbortSignal } = {}): Promise<T> {
    let url = `${this.baseUrl}/api/v1${path}`;
    if (query) {
      const q = Object.entries(query).filter(([, v]) => v !== undefined && v !== null)
        .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
      if (q.length) url += `?${q.join("&")}`;
    }
    const headers: Record<string, string> = { Accept: "application/json" };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
    const retriable = method === "GET" || method === "HEAD" || idempotencyKey !== undefined;
    for (let attempt = 0; ; attempt += 1) {
      let resp: Response;
      try {
        resp = await this.fetchImpl(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
      } catch (err) {
        if ((err as { name?: string })?.name === "AbortError") throw err;
        throw new ApiError(0, "network_error", `cannot reach the server: ${(err as Error)?.message ?? err}`);
      }
      if (!this.clock.synced) this.clock.sampleDateHeader(resp.headers.get("date"));
      const text = await resp.text();
      let data: unknown = null;
      try {
        data = text ? JSON.parse(text) : null;
      } catch {
        data = null;
      }
      if (resp.ok) return data as T;
      const e = (data ?? {}) as { code?: string; message?: string; details?: unknown };
      const retryAfter = Number(resp.headers.get("retry-after")) || undefined;
      const error = new ApiError(resp.status, e.code ?? `http_${resp.status}`, e.message ?? resp.statusText, e.details, retryAfter);
      if (resp.status === 503 && retriable && attempt < this.retries
        && (error.code === "storage_busy" || error.code === "storage_unavailable")) {
        await sleep((retryAfter ?? 1) * 1000);
        continue;
      }
      throw error;
    }
  }

  // -- players and accounts ---------------------------------------------------------------------

  /** `GET /players/me` (also sets {@link player}). */
  async me(): Promise<Player> {
    this.player = await this.request<Player>("GET", "/players/me");
    return this.player;
  }

  /** Give this guest a username and password (`POST /accounts/claim`); the token stays valid. */
  claim(username: string, password: string): Promise<{ player: Player; username: string }> {
    return this.request("POST", "/accounts/claim", { username, password }, { idempotencyKey: uuid() });
  }

  /** `GET /accounts/me`: `{player, username}` (username null for a guest). */
  account(): Promise<{ player: Player; username: string | null }> {
    return this.request("GET", "/accounts/me");
  }

  // -- games --------------------------------------------------------------------------------------

  games(): Promise<GameInfo[]> {
    return this.request("GET", "/games");
  }

  game(id: string): Promise<GameInfo> {
    return this.request("GET", `/games/${encodeURIComponent(id)}`);
  }

  // -- lobbies ------------------------------------------------------------------------------------

  /** A lobby in which you hold seat 0 and are the host (`POST /lobbies`). */
  createLobby(game: string, seats: number, { options, rated, loadout }:
    { options?: Record<string, unknown>; rated?: boolean; loadout?: string[] } = {}): Promise<Lobby> {
    const body: Record<string, unknown> = { game, seats };
    if (options !== undefined) body.options = options;
    if (rated !== undefined) body.rated = rated;
    if (loadout !== undefined) body.loadout = loadout;
    return this.request("POST", "/lobbies", body);
  }

  lobbies(filter: { game?: string; status?: "open" | "started" | "closed" | "all"; cursor?: string; limit?: number } = {}): Promise<Page<Lobby>> {
    return this.request("GET", "/lobbies", undefined, { query: filter });
  }

  /** `GET /lobbies/{id}`; with `wait` and `state` (the last answer's), a long-poll that answers
   *  when the lobby changes, on a server that has it (others answer at once). */
  lobby(id: string, { wait, state, signal }: { wait?: number; state?: string; signal?: AbortSignal } = {}): Promise<Lobby> {
    const query = state === undefined ? {} : { wait, state };
    return this.request("GET", `/lobbies/${encodeURIComponent(id)}`, undefined, { query, signal });
  }

  /**
   * The lobby once `until(lobby)` is true (default: it has a `match_id`), by long-polling
   * `GET /lobbies/{id}?wait=&state=`; on a server without the lobby long-poll (no `state` in its
   * answers) by asking every `pollMs` (default 1000). Rejects with `ApiError` code `timeout` after
   * `timeoutMs` (default 120000).
   */
  async waitLobby(id: string, until: (lobby: Lobby) => boolean = (l) => l.match_id !== null,
    { timeoutMs = 120_000, pollMs = 1000, wait = 25 }: { timeoutMs?: number; pollMs?: number; wait?: number } = {}): Promise<Lobby> {
    const end = Date.now() + timeoutMs;
    let lobby = await this.lobby(id);
    while (!until(lobby)) {
      const left = end - Date.now();
      if (left <= 0) throw new ApiError(0, "timeout", `lobby ${id} did not change as waited for`);
      if (typeof lobby.state === "string") {
        lobby = await this.lobby(id, { wait: Math.max(0, Math.min(wait, Math.floor(left / 1000))), state: lobby.state });
      } else {
        await sleep(Math.min(pollMs, left));
        lobby = await this.lobby(id);
      }
    }
    return lobby;
  }

  /** Take a seat (`POST /lobbies/{id}/join`; idempotent: a seated player gets their seat back). */
  join(id: string, { seat, loadout }: { seat?: number; loadout?: string[] } = {}): Promise<Lobby> {
    const body: Record<string, unknown> = {};
    if (seat !== undefined) body.seat = seat;
    if (loadout !== undefined) body.loadout = loadout;
    return this.request("POST", `/lobbies/${encodeURIComponent(id)}/join`, body);
  }

  leave(id: string): Promise<Lobby> {
    return this.request("POST", `/lobbies/${encodeURIComponent(id)}/leave`);
  }

  /** Fill empty seats with bots (host only; `kind` one of the game's `bot_kinds`). */
  addBots(id: string, kind = "random", count?: number): Promise<Lobby> {
    const body: Record<string, unknown> = { kind };
    if (count !== undefined) body.count = count;
    return this.request("POST", `/lobbies/${encodeURIComponent(id)}/bots`, body);
  }

  /** Start the match (host only; every seat filled): the lobby with its `match_id`. Sent with an
   *  Idempotency-Key, so a retry after a lost answer starts nothing twice. */
  start(id: string, { idempotencyKey = uuid() }: { idempotencyKey?: string } = {}): Promise<Lobby & { match_id: string }> {
    return this.request("POST", `/lobbies/${encodeURIComponent(id)}/start`, undefined, { idempotencyKey });
  }

  // -- matches ------------------------------------------------------------------------------------

  match(id: string): Promise<Match> {
    return this.request("GET", `/matches/${encodeURIComponent(id)}`);
  }

  /**
   * Open the match socket ({@link MatchConnection}) with this client's token. Type it by game:
   * `client.connect<G>(id)`, with `G` a game id of `GameId`, gives that game's view, events and actions.
   */
  connect<G extends GameId | string = string>(matchId: string, options: Omit<ConnectionOptions, "matchId" | "token" | "baseUrl"> = {}):
    MatchConnection<G extends GameId ? Games[G]["view"] : Record<string, unknown>,
      G extends GameId ? Games[G]["event"] : Record<string, unknown>,
      G extends GameId ? Games[G]["action"] : { type: string; [k: string]: unknown }> {
    if (!this.token) throw new Error("sign in first: the socket's hello needs a token");
    return new MatchConnection({ clock: this.clock, ...options, baseUrl: this.baseUrl, matchId, token: this.token });
  }

  // -- quick play ---------------------------------------------------------------------------------

  /** Queue for a match (`POST /matchmaking/tickets`); `botsAfterSeconds`: bots fill the table
   *  after that long (null: never). */
  queue(game: string, seats: number, { options, botsAfterSeconds }:
    { options?: Record<string, unknown>; botsAfterSeconds?: number | null } = {}): Promise<Ticket> {
    const body: Record<string, unknown> = { game, seats };
    if (options !== undefined) body.options = options;
    if (botsAfterSeconds !== undefined) body.bots_after_seconds = botsAfterSeconds;
    return this.request("POST", "/matchmaking/tickets", body);
  }

  /** `GET /matchmaking/tickets/{id}`; `wait` (0–30 s): a long-poll until matched or cancelled. */
  ticket(id: string, { wait }: { wait?: number } = {}): Promise<Ticket> {
    return this.request("GET", `/matchmaking/tickets/${encodeURIComponent(id)}`, undefined, { query: { wait } });
  }

  cancelTicket(id: string): Promise<Ticket> {
    return this.request("DELETE", `/matchmaking/tickets/${encodeURIComponent(id)}`);
  }

  /** The ticket once matched (its `match_id`), by long-polls; throws ApiError `ticket_cancelled`
   *  if it was cancelled, `timeout` after `timeoutMs` (default 120000). */
  async waitForMatch(ticketId: string, { timeoutMs = 120_000 }: { timeoutMs?: number } = {}): Promise<Ticket & { match_id: string }> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const left = end - Date.now();
      if (left <= 0) throw new ApiError(0, "timeout", `ticket ${ticketId} was not matched in time`);
      const ticket = await this.ticket(ticketId, { wait: Math.max(0, Math.min(25, Math.floor(left / 1000))) });
      if (ticket.status === "matched" && ticket.match_id) return ticket as Ticket & { match_id: string };
      if (ticket.status === "cancelled") throw new ApiError(409, "ticket_cancelled", "the ticket was cancelled");
    }
  }

  // -- parties ------------------------------------------------------------------------------------

  createParty(game: string, seats: number, { options }: { options?: Record<string, unknown> } = {}): Promise<Party> {
    const body: Record<string, unknown> = { game, seats };
    if (options !== undefined) body.options = options;
    return this.request("POST", "/parties", body);
  }

  /** The party you are in; ApiError `not_found` if none. */
  myParty(): Promise<Party> {
    return this.request("GET", "/parties/mine");
  }

  joinParty(code: string): Promise<Party> {
    return this.request("POST", "/parties/join", { code });
  }

  /** `GET /parties/{id}`; with `wait` and `state` (the last answer's), a long-poll. */
  party(id: string, { wait, state }: { wait?: number; state?: string } = {}): Promise<Party> {
    return this.request("GET", `/parties/${encodeURIComponent(id)}`, undefined, { query: state === undefined ? {} : { wait, state } });
  }

  /** The party once `until(party)` is true (default: its ticket is matched), by long-polls. */
  async waitParty(id: string, until: (party: Party) => boolean = (p) => p.ticket?.status === "matched",
    { timeoutMs = 120_000 }: { timeoutMs?: number } = {}): Promise<Party> {
    const end = Date.now() + timeoutMs;
    let party = await this.party(id);
    while (!until(party)) {
      const left = end - Date.now();
      if (left <= 0) throw new ApiError(0, "timeout", `party ${id} did not change as waited for`);
      party = await this.party(id, { wait: Math.max(0, Math.min(25, Math.floor(left / 1000))), state: party.state });
    }
    return party;
  }

  /** Queue the party (leader only): one ticket seating every member. */
  queueParty(id: string, { botsAfterSeconds }: { botsAfterSeconds?: number | null } = {}): Promise<Ticket> {
    const body: Record<string, unknown> = {};
    if (botsAfterSeconds !== undefined) body.bots_after_seconds = botsAfterSeconds;
    return this.request("POST", `/parties/${encodeURIComponent(id)}/queue`, body);
  }

  cancelPartyQueue(id: string): Promise<Ticket> {
    return this.request("DELETE", `/parties/${encodeURIComponent(id)}/queue`);
  }

  newInvite(id: string): Promise<Party> {
    return this.request("POST", `/parties/${encodeURIComponent(id)}/invite`);
  }

  leaveParty(id: string): Promise<{ party_id: string; ticket_cancelled: boolean }> {
    return this.request("POST", `/parties/${encodeURIComponent(id)}/leave`);
  }

  endParty(id: string): Promise<{ party_id: string; ticket_cancelled: boolean }> {
    return this.request("DELETE", `/parties/${encodeURIComponent(id)}`);
  }

  // -- rematch ------------------------------------------------------------------------------------

  rematch(matchId: string, { wait, state }: { wait?: number; state?: string } = {}): Promise<Rematch> {
    return this.request("GET", `/matches/${encodeURIComponent(matchId)}/rematch`, undefined, { query: state === undefined ? {} : { wait, state } });
  }

  agreeRematch(matchId: string): Promise<Rematch> {
    return this.request("POST", `/matches/${encodeURIComponent(matchId)}/rematch`);
  }

  declineRematch(matchId: string): Promise<Rematch> {
    return this.request("DELETE", `/matches/${encodeURIComponent(matchId)}/rematch`);
  }
}
