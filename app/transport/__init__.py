"""Match sockets: how their frames travel, behind one small interface.

The interface, all that the runtime (runners, the log writer, bots, links) may use of a socket:

- a socket is a :class:`~app.runtime.match.Peer` (re-exported here): ``viewer``, ``player_id``,
  ``sent_version``, ``deltas``, ``push(text)`` (never blocks; a client that stops reading is closed
  with 4008) and ``close(code, reason)`` (returns at once; bounded: ``socket_close_seconds``);
- a batch of writes is a :class:`Batches`: ``with batches():`` around what one group commit
  delivers, and each socket's frames pushed inside leave in one write, in order
  (:meth:`SocketHub.corked`, handed to ``app.runtime.logwriter.LogWriter`` as ``sends``).

Nothing in ``app/runtime`` imports this package (``tests/runtime/test_transport_interface.py``
checks both). The steps of a socket that do not depend on the transport (``hello``, admission,
joining, routing, the message budget) are in :mod:`app.transport.session`.

Two implementations, with the same protocol (``docs/protocol.md``) and the same tests (the socket
test modules run on both: ``tests/conftest.py``, ``both_transports``):

- :mod:`app.transport.fast`, the **lean** transport: one ``asyncio.Protocol`` object per socket under
  uvicorn (the handshake by ``websockets``, frames by :mod:`app.transport.frames`), no task or
  coroutine per socket; what ``bannerfall serve`` uses;
- :mod:`app.transport.asgi`, the **ASGI** transport: a FastAPI WebSocket route, for any ASGI server,
  and for ``permessage-deflate``. Its batches are ordered but not joined: each message is one
  ``send`` of the ASGI server.

:mod:`app.transport.servers` picks one (``BANNERFALL_SOCKET_TRANSPORT``) and checks that uvicorn
still has what the lean one relies on.
"""
from contextlib import AbstractContextManager
from typing import Protocol

from app.runtime.match import Peer
from app.transport.hub import SocketHub

__all__ = ["Batches", "Peer", "SocketHub"]


class Batches(Protocol):
    """A batch of writes (:meth:`SocketHub.corked`): the frames pushed to each socket inside the
    ``with`` leave in one write per socket, in order, when it ends; nested, the outermost one writes."""

    def __call__(self) -> AbstractContextManager[None]: ...
