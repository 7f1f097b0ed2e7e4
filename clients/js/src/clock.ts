// The server's clock as seen from here: deadlines (`deadline_at`) are server epoch seconds, and a
// device's clock may be off by minutes. Samples come from `server_time` (epoch seconds, the clock
// of `deadline_at`) in every `state` and `pong`, and, coarsely, from a REST answer's `Date` header.
// A server without `server_time` gives no socket samples: then the Date header's offset is used when
// it is over 2 s (its resolution is 1 s), else no correction at all.

/** Seconds since the epoch on this device. */
const localNow = (): number => Date.now() / 1000;

interface Sample {
  offset: number; // server - local, seconds
  error: number; // half the round trip (pong), or a bound on the one-way delay (state)
  at: number; // local seconds
}

const KEEP = 8; // the recent samples kept; the one with the smallest error wins
const STATE_ERROR = 0.25; // what a state's one-way delay is taken to be, at most, without a round trip
const STALE_SECONDS = 600; // a sample this old counts as if its error had grown by its age / 100

export class ServerClock {
  private samples: Sample[] = [];
  private dateOffset: number | null = null;

  /** Server time minus local time, in seconds (0 until a sample arrives). */
  get offset(): number {
    const now = localNow();
    let best: Sample | null = null;
    let bestError = Infinity;
    for (const s of this.samples) {
      const age = Math.max(0, now - s.at);
      const error = s.error + (age > STALE_SECONDS ? age / 100 : 0);
      if (error < bestError) {
        best = s;
        bestError = error;
      }
    }
    if (best) return best.offset;
    return this.dateOffset ?? 0;
  }

  /** True once a socket sample (`server_time`) has been taken. */
  get synced(): boolean {
    return this.samples.length > 0;
  }

  /**
   * A `server_time` heard at local time `receivedAt` (seconds; default now). With `sentAt` (the
   * local time the request left: a `ping`'s), the offset is taken at the round trip's middle and
   * its error is half the round trip; without it (a `state`), the message was made at most the
   * one-way delay before it arrived.
   */
  sample(serverTime: unknown, receivedAt: number = localNow(), sentAt?: number): void {
    if (typeof serverTime !== "number" || !Number.isFinite(serverTime)) return;
    let offset: number;
    let error: number;
    if (sentAt !== undefined && sentAt <= receivedAt) {
      offset = serverTime - (sentAt + receivedAt) / 2;
      error = (receivedAt - sentAt) / 2;
    } else {
      offset = serverTime - receivedAt;
      error = STATE_ERROR;
    }
    this.samples.push({ offset, error, at: receivedAt });
    if (this.samples.length > KEEP) this.samples.shift();
  }

  /** A REST answer's `Date` header (1 s resolution): used only while no socket sample exists, and
   *  only when it says the local clock is more than 2 s off. */
  sampleDateHeader(date: string | null | undefined, receivedAt: number = localNow()): void {
    if (!date) return;
    const server = Date.parse(date) / 1000;
    if (!Number.isFinite(server)) return;
    const offset = server + 0.5 - receivedAt;
    this.dateOffset = Math.abs(offset) > 2 ? offset : 0;
  }

  /** The server's time now, in epoch seconds. */
  now(): number {
    return localNow() + this.offset;
  }

  /** Seconds left until `deadlineAt` (server epoch seconds), never below 0; null for no deadline. */
  secondsLeft(deadlineAt: number | null | undefined): number | null {
    if (deadlineAt === null || deadlineAt === undefined) return null;
    return Math.max(0, deadlineAt - this.now());
  }
}

/** The clock every client and connection shares unless given its own. */
export const serverClock = new ServerClock();

/**
 * Call `onTick(secondsLeft)` now and every `intervalMs` (default 250) until `deadlineAt` (server
 * epoch seconds, corrected by `clock`) has passed (the last call gets 0) or the returned function
 * is called. `secondsLeft` is fractional: show `Math.ceil` of it.
 */
export function countdown(deadlineAt: number | null | undefined, onTick: (secondsLeft: number | null) => void,
  { clock = serverClock, intervalMs = 250 }: { clock?: ServerClock; intervalMs?: number } = {}): () => void {
  let timer: ReturnType<typeof setInterval> | null = null;
  const stop = () => {
    if (timer !== null) clearInterval(timer);
    timer = null;
  };
  const tick = () => {
    const left = clock.secondsLeft(deadlineAt);
    onTick(left);
    if (left === null || left <= 0) stop();
  };
  tick();
  if (deadlineAt !== null && deadlineAt !== undefined && clock.secondsLeft(deadlineAt)! > 0) {
    timer = setInterval(tick, intervalMs);
  }
  return stop;
}
