"""Which of the compiled hot paths run: mypyc's C extension, or the ``.py`` sources.

``setup.py`` compiles the modules of :data:`COMPILED` with mypyc into one C extension (the shared
library ``app/_native__mypyc*.so`` and one small ``.so`` per module beside its ``.py``) and writes
:data:`MANIFEST`: the SHA-256 of every source it compiled. Python would import a ``.so`` before the
``.py`` beside it, so :func:`install` (run by ``app/__init__.py``, before any of them is imported)
decides once for all of them:

- **compiled** when every module has its ``.so`` and every source is the one compiled (the manifest's
  hashes), and ``BANNERFALL_PURE_PYTHON`` is not set;
- **source** otherwise — an edited ``.py`` after an editable install, a build without a C compiler, or
  the variable set. Then a finder in front of ``sys.meta_path`` loads every module of
  :data:`COMPILED` from its ``.py``. All of them or none: compiled modules call each other's
  compiled functions directly, so a stale one could not be swapped for its source alone.

:data:`STATUS` says which and why (``bannerfall serve`` logs it at start). The test suite imports the
sources (:func:`prefer_source`: coverage and monkeypatching need Python code) and checks that the
compiled modules give the same patches and documents (``tests/runtime/test_native.py``); the servers
it starts run what is installed.

This module imports nothing of ``app`` (``setup.py`` reads :data:`COMPILED` from it).
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["ASKED", "COMPILED", "GROUP", "MANIFEST", "STATUS", "compiled", "install", "prefer_source", "why_source"]

#: the modules compiled by mypyc (the per-action hot paths: docs/decisions.md, "Compiled hot paths")
COMPILED: tuple[str, ...] = (
    "app.delta",
    "app.runtime.audience",
    "app.runtime.history",
    "app.runtime.wire",
    "app.runtime.match",
    "app.runtime.protocol",
    "app.games.conquest.view",
    "app.games.warrior.view",
    "app.games.provinces.view",
)
#: mypyc's group: its shared library is the module ``app._native__mypyc``
GROUP = "app._native"
#: written by setup.py beside this file: {"group": GROUP, "sources": {module: sha256 of its .py}}
MANIFEST = "_native.json"

_APP = Path(__file__).resolve().parent
#: "compiled", or "source: <why>" once :func:`install` ran
STATUS = "not decided"
#: whether the sources run because someone asked (``BANNERFALL_PURE_PYTHON``, :func:`prefer_source`),
#: not because the compiled modules are missing or stale
ASKED = False


_ASKED_BY_VARIABLE = "BANNERFALL_PURE_PYTHON is set"


def _source_path(module: str, app_dir: Path = _APP) -> Path:
    return app_dir.parent / (module.replace(".", "/") + ".py")


def _extension_of(module: str, app_dir: Path = _APP) -> Path | None:
    source = _source_path(module, app_dir)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = source.with_name(source.stem + suffix)
        if candidate.exists():
            return candidate
    return None


def why_source(app_dir: Path = _APP, environ: Mapping[str, str] = os.environ) -> str | None:
    """None when the compiled modules of the ``app`` package in ``app_dir`` are usable, else why not
    (one line): ``BANNERFALL_PURE_PYTHON`` set in ``environ``, no ``.so``, some missing, no manifest,
    or a source whose SHA-256 is not the manifest's."""
    if environ.get("BANNERFALL_PURE_PYTHON", "").strip() not in ("", "0"):
        return _ASKED_BY_VARIABLE
    built = [module for module in COMPILED if _extension_of(module, app_dir) is not None]
    if not built:
        return "not compiled (installed without a C compiler, or the compilation failed: pip install -v -e . shows why)"
    try:
        manifest: dict[str, Any] = json.loads((app_dir / MANIFEST).read_text())
        hashes: dict[str, str] = manifest["sources"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"{MANIFEST} is missing or unreadable"
    if manifest.get("group") != GROUP or _extension_of(GROUP + "__mypyc", app_dir) is None:
        return f"the shared library of the compiled modules ({GROUP}__mypyc) is missing"
    missing = [module for module in COMPILED if module not in built]
    if missing:
        return f"no compiled module for {', '.join(missing)}"
    for module in COMPILED:
        try:
            digest = hashlib.sha256(_source_path(module, app_dir).read_bytes()).hexdigest()
        except OSError:
            return f"{module}: source unreadable"
        if hashes.get(module) != digest:
            return f"{module} changed since it was compiled (reinstall: pip install -e .)"
    return None


class _SourceFinder:
    """Loads the modules of :data:`COMPILED` from their ``.py`` files (a meta path finder)."""

    @classmethod
    def find_spec(cls, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in COMPILED:
            return None
        return importlib.util.spec_from_file_location(fullname, _source_path(fullname))

    @classmethod
    def invalidate_caches(cls) -> None:
        pass


def _use_source(why: str) -> None:
    global STATUS
    STATUS = f"source: {why}"
    if _SourceFinder not in sys.meta_path:
        sys.meta_path.insert(0, _SourceFinder)


def install() -> str:
    """Decide, once, whether the compiled modules run (see the module's docstring); returns :data:`STATUS`."""
    global STATUS, ASKED
    if STATUS == "not decided":
        why = why_source()
        if why is None:
            STATUS = "compiled"
        else:
            ASKED = why == _ASKED_BY_VARIABLE
            _use_source(why)
    return STATUS


def prefer_source(why: str = "asked for") -> None:
    """Run the ``.py`` sources of :data:`COMPILED` from now on. Raises RuntimeError if one of them
    was already imported compiled (call it before importing them)."""
    global ASKED
    loaded = [name for name in COMPILED if name in sys.modules and compiled(sys.modules[name])]
    if loaded:
        raise RuntimeError(f"already imported compiled: {', '.join(loaded)}")
    ASKED = True
    _use_source(why)


def compiled(module: Any) -> bool:
    """Whether ``module`` was loaded from a C extension."""
    return isinstance(getattr(module, "__loader__", None), importlib.machinery.ExtensionFileLoader)
