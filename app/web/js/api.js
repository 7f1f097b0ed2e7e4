// REST client for /api/v1 (docs/protocol.md). Every failure throws ApiError with the server's code.
import { setClockOffset } from "./dom.js";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

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

let clockChecked = false;

/** Call the REST API. ``token`` defaults to the saved guest token. */
export async function api(method, path, body, token) {
  const headers = { Accept: "application/json" };
  const auth = token === undefined ? savedPlayer()?.token : token;
  if (auth) headers.Authorization = `Bearer ${auth}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let resp;
  try {
    resp = await fetch(`/api/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (exc) {
    throw new ApiError(0, "network_error", "cannot reach the server — check your connection");
  }
  if (!clockChecked) checkClock(resp);
  const text = await resp.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!resp.ok) {
    throw new ApiError(resp.status, data?.code || "http_" + resp.status, data?.message || resp.statusText);
  }
  return data;
}

/** Deadlines are server epoch seconds: correct for a local clock that is clearly off. */
function checkClock(resp) {
  const date = resp.headers.get("date");
  if (!date) return;
  clockChecked = true;
  const offset = Date.parse(date) / 1000 - Date.now() / 1000;
  if (Math.abs(offset) > 2) setClockOffset(offset);
}
