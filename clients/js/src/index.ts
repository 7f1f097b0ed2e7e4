// @bannerfall/client: the Bannerfall client SDK (browser entry: the global WebSocket).
// In node, the package's "node" export (src/node.ts) sets the `ws` package's WebSocket first.
export { Client } from "./rest.js";
export type {
  ClientOptions, Player, Seat, Lobby, Ticket, Party, Rematch, Match, GameInfo, Page,
} from "./rest.js";
export { MatchConnection, PROTOCOL, setDefaultWebSocket, defaultSeq } from "./connection.js";
export type {
  ConnectionOptions, ConnectionStatus, MatchState, WebSocketLike, WebSocketFactory,
} from "./connection.js";
export { ServerClock, serverClock, countdown } from "./clock.js";
export { applyPatch } from "./patch.js";
export type { PatchOperation } from "./patch.js";
export { ApiError, ActError, PatchError } from "./errors.js";
export type * from "./generated/messages.js";
export type * from "./generated/games.js";
export type { conquest, provinces, warrior } from "./generated/games.js";
