// @bannerfall/client in node: connections use the `ws` package's WebSocket (node 20 has no stable
// global one), then everything is as in the browser entry.
import WebSocket from "ws";
import { setDefaultWebSocket, type WebSocketFactory } from "./connection.js";

setDefaultWebSocket(WebSocket as unknown as WebSocketFactory);

export * from "./index.js";
