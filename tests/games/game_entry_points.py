"""Install a game for a test the way a distribution does: a ``*.dist-info`` folder with a
``bannerfall.games`` entry point, on ``sys.path`` (and, for server processes, on ``PYTHONPATH``).
No pip, no network: ``importlib.metadata`` finds it as it finds any installed distribution."""
from __future__ import annotations

import contextlib
import importlib
import sys
from pathlib import Path
from typing import Iterator


def write_dist(folder: Path, name: str, value: str, dist: str | None = None) -> Path:
    """A distribution ``dist`` (default ``test-<name>``) in ``folder`` whose entry point ``name`` of
    the ``bannerfall.games`` group is ``value`` (``module:attribute``); returns ``folder``."""
    dist = dist or f"test-{name}"
    info = folder / f"{dist.replace('-', '_')}-0.0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.0.0\n")
    (info / "entry_points.txt").write_text(f"[bannerfall.games]\n{name} = {value}\n")
    return folder


def _clear() -> None:
    from app.client.wording import wording
    from app.games import registry

    importlib.invalidate_caches()
    registry.cache_clear()
    wording.cache_clear()


@contextlib.contextmanager
def installed_game(folder: Path, name: str, value: str, dist: str | None = None) -> Iterator[Path]:
    """The game ``value`` registered as ``name`` while the block runs (registry and wording caches
    cleared on the way in and out)."""
    write_dist(folder, name, value, dist)
    sys.path.insert(0, str(folder))
    _clear()
    try:
        yield folder
    finally:
        sys.path.remove(str(folder))
        _clear()
