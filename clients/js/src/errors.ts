/** A REST answer that is not 2xx: the server's `{code, message}` (docs/protocol.md, "REST"). */
export class ApiError extends Error {
  /** HTTP status; 0 when the server could not be reached. */
  readonly status: number;
  /** The server's snake_case code (`not_found`, `no_free_seat`, …; `network_error` for no answer). */
  readonly code: string;
  /** Validation details (`[{loc, msg}]`) of a 422, when the server sent them. */
  readonly details?: unknown;
  /** Seconds from a `Retry-After` header (429, 503), when there was one. */
  readonly retryAfter?: number;

  constructor(status: number, code: string, message: string, details?: unknown, retryAfter?: number) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.details = details;
    this.retryAfter = retryAfter;
  }
}

/**
 * An `act` the server refused (its `error` with the act's `seq`: `not_your_turn`, `stale_version`,
 * a game's code …; nothing changed), or one that cannot be answered any more (`closed`: the
 * connection stopped for good before its `ack`).
 */
export class ActError extends Error {
  readonly code: string;
  readonly seq: number;
  /** The `version` of a `stale_version` / `bad_version` error: the newest you may hold. */
  readonly version?: number | null;

  constructor(code: string, message: string, seq: number, version?: number | null) {
    super(message);
    this.name = "ActError";
    this.code = code;
    this.seq = seq;
    this.version = version;
  }
}

/** A delta's patch that does not apply to the held document (the connection then resumes). */
export class PatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PatchError";
  }
}
