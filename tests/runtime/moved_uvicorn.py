"""``python -m tests.runtime.moved_uvicorn serve``: ``bannerfall serve`` on a uvicorn whose internals
moved (``tests/runtime/test_uvicorn_upgrade.py``).

uvicorn's ``HttpToolsProtocol.handle_websocket_upgrade`` is replaced by a wrapper that does the same
(it calls the original) in other code, so :func:`app.transport.servers.internals_problem` no longer
finds in it the names the lean transport relies on, as after an upgrade that rewrote the method.
uvicorn's stock protocols keep working: the server must serve its sockets with them."""
from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.cli import main

_original = HttpToolsProtocol.handle_websocket_upgrade


def _rewritten(self: HttpToolsProtocol) -> None:
    _original(self)


HttpToolsProtocol.handle_websocket_upgrade = _rewritten  # type: ignore[method-assign]

if __name__ == "__main__":
    main()
