// REST client for /api/v1 (docs/protocol.md): the SDK's Client (./sdk/bannerfall-client.js, built
// from clients/js) with the guest token this browser keeps. Every failure throws the SDK's ApiError
// with the server's code; each answer's Date header corrects the SDK's server clock until a socket
// has given it the server's own time.
import { Client, ApiError } from "./sdk/bannerfall-client.js";

export { ApiError };

const PLAYER_KEY = "bannerfall.player";

/** The guest identity of this browser: {token, player: {id, name, role}} or null. */
export function savedPlayer() {
  try {
    return JSON.parse(localStorage.getItem(PLAYER_KEY) || "null");
  } catch {
    return null;
  }
}

export function savePlayer(value) {
  if (value) localStorage.setItem(PLAYER_KEY, JSON.stringify(value));
  else localStorage.removeItem(PLAYER_KEY);
}

/** Call the REST API. ``token`` defaults to the saved guest token. */
export async function api(method, path, body, token) {
  const auth = token === undefined ? savedPlayer()?.token : token;
  const client = new Client({ token: auth || null, retries: 0 });
  try {
    return await client.request(method, path, body);
  } catch (exc) {
    if (exc instanceof ApiError && exc.code === "network_error") {
      throw new ApiError(0, "network_error", "cannot reach the server — check your connection");
    }
    throw exc;
  }
}
