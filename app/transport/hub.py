"""What the match sockets of one app share (:class:`SocketHub`, made in the app's lifespan as
``app.state.sockets``): the framing of a text sent to many sockets, the batch of writes while a
group commit is delivered, and the keepalive of the lean transport's sockets."""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from app.transport.frames import OP_TEXT, frame

log = logging.getLogger("bannerfall.ws")

__all__ = ["Batchable", "SocketHub"]


class Batchable(Protocol):
    """A socket whose frames a batch collects (:meth:`SocketHub.corked`)."""

    def write_frames(self, frames: list[bytes]) -> None: ...


class KeptAlive(Protocol):
    """A socket the keepalive sweep looks after (``app.transport.fast.FastSocket``)."""

    last_seen: float

    def keepalive(self, now: float, idle_ping: float, idle_drop: float) -> None: ...


class SocketHub:
    """Per-app state of the match sockets (both transports).

    - :meth:`text_frame`: a server text frame, the last one reused when the same ``str`` object comes
      again (one message pushed to every socket of an audience is framed once).
    - :meth:`corked`: while a durable record is delivered (``app.runtime.logwriter``), the frames
      written to each socket wait and leave in one ``transport.write`` per socket at the end, in
      order: an action's ``delta`` and its ``ack`` in one system call.
    - the keepalive of lean sockets (:meth:`start`): a socket silent for ``heartbeat_seconds`` gets a
      ping; one silent for three times that is dropped (its client is gone without a close). One
      sweep task for the node, walking a slice of the sockets each tenth of a second, instead of a
      timer per socket."""

    SWEEP_SECONDS = 0.1

    def __init__(self, *, heartbeat_seconds: float = 20.0) -> None:
        self.heartbeat_seconds = heartbeat_seconds
        self._last: tuple[str, bytes] | None = None
        #: socket -> frames held by the outermost ``corked`` (None outside one)
        self.batch: dict[Batchable, list[bytes]] | None = None
        #: the lean sockets open now (the keepalive walks them)
        self.sockets: set[KeptAlive] = set()
        self._sweep: list[KeptAlive] = []
        self._task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ frames
    def text_frame(self, text: str) -> bytes:
        """``text`` as one unmasked, unfragmented server text frame without extensions (RFC 6455 5.2)."""
        last = self._last
        if last is not None and last[0] is text:
            return last[1]
        data = frame(OP_TEXT, text.encode())
        self._last = (text, data)
        return data

    @contextmanager
    def corked(self) -> Iterator[None]:
        """Frames written inside (through :meth:`hold`) leave at the end, one write per socket, in
        order. Nested: the outermost one writes."""
        if self.batch is not None:
            yield
            return
        self.batch = {}
        try:
            yield
        finally:
            batch, self.batch = self.batch, None
            self._last = None  # the text it keeps alive is of this batch only
            for sock, frames in batch.items():
                sock.write_frames(frames)

    def hold(self, sock: Batchable, data: bytes) -> bool:
        """Inside :meth:`corked`, keep ``data`` for ``sock`` and return True; else False (write it now)."""
        batch = self.batch
        if batch is None:
            return False
        frames = batch.get(sock)
        if frames is None:
            batch[sock] = [data]
        else:
            frames.append(data)
        return True

    # ------------------------------------------------------------------ keepalive
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._keepalive(), name="socket-keepalive")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def _keepalive(self) -> None:
        # every socket is looked at once per ``heartbeat_seconds / 4`` at most, a slice per sweep
        while True:
            await asyncio.sleep(self.SWEEP_SECONDS)
            try:
                self.sweep(time.monotonic())
            except Exception:  # never let one socket stop the keepalive of the others
                log.exception("socket keepalive sweep failed")

    def sweep(self, now: float) -> None:
        """One slice of the keepalive: ping the sockets silent for ``heartbeat_seconds``, drop those
        silent for three times that."""
        if not self._sweep:
            if not self.sockets:
                return
            self._sweep = list(self.sockets)
        rounds = max(1.0, self.heartbeat_seconds / 4 / self.SWEEP_SECONDS)
        count = max(1, int(len(self.sockets) / rounds) + 1)
        todo, self._sweep = self._sweep[-count:], self._sweep[:-count]
        ping, drop = self.heartbeat_seconds, 3 * self.heartbeat_seconds
        for sock in todo:
            if now - sock.last_seen >= ping:
                sock.keepalive(now, ping, drop)

    def stats(self) -> dict[str, Any]:
        return {"lean_sockets": len(self.sockets)}
