"""Which of the compiled hot paths run: mypyc's C extension, or the ``.py`` sources.

``setup.py`` compiles with mypyc the runtime's hot paths (:data:`CORE`) and the modules each of
Bannerfall's own games declares compiled (``GameInfo.compiled``, found by
:func:`declared_games_compiled` without importing anything) into one C extension (the shared
library ``app/_native__mypyc*.so`` and one small ``.so`` per module beside its ``.py``) and writes
:data:`MANIFEST`: the SHA-256 of every source it compiled; :data:`COMPILED` is that list. Python
would import a ``.so`` before the ``.py`` beside it, so :func:`install` (run by ``app/__init__.py``,
before any of them is imported) decides once for all of them:

- **compiled** when every module has its ``.so`` and every source is the one compiled (the manifest's
  hashes), and ``BANNERFALL_PURE_PYTHON`` is not set;
- **source** otherwise — an edited ``.py`` after an editable install, a build without a C compiler, or
  the variable set. Then a finder in front of ``sys.meta_path`` loads every module of ``app`` that
  has a ``.so`` beside its ``.py`` from the ``.py``. All of them or none: compiled modules call each
  other's compiled functions directly, so a stale one could not be swapped for its source alone.

A game in a distribution of its own compiles (or not) with its own build; its ``GameInfo.compiled``
says which of its modules that build compiles, and :func:`compiled_report` tells whether they are.

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

__all__ = ["ASKED", "COMPILED", "CORE", "GROUP", "MANIFEST", "STATUS", "compiled", "compiled_report",
           "declared_games_compiled", "install", "prefer_source", "why_source"]

#: the runtime's modules compiled by mypyc (the per-action hot paths: docs/decisions.md, "Compiled hot paths")
CORE: tuple[str, ...] = (
    "app.delta",
    "app.parts",
    "app.runtime.audience",
    "app.runtime.history",
    "app.runtime.wire",
    "app.runtime.match",
    "app.runtime.protocol",
)
#: mypyc's group: its shared library is the module ``app._native__mypyc``
GROUP = "app._native"
#: written by setup.py beside this file: {"group": GROUP, "sources": {module: sha256 of its .py}}
MANIFEST = "_native.json"
#: the entry-point group of games (``app.games.ENTRY_POINT_GROUP``; this module imports nothing of app)
GAMES_GROUP = "bannerfall.games"

_APP = Path(__file__).resolve().parent


def declared_games_compiled(root: Path) -> tuple[str, ...]:
    """The modules Bannerfall's own games declare compiled, read from the source tree at ``root``
    without importing it: the games are the ``bannerfall.games`` entry points of ``pyproject.toml``,
    and each game's list is the literal ``compiled=(...)`` of the ``GameInfo(...)`` in its package's
    ``.py`` files. In entry-point order, each module once. Raises ValueError when a ``compiled=`` is
    not a literal tuple or list of strings."""
    import ast
    import tomllib

    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    points = project.get("project", {}).get("entry-points", {}).get(GAMES_GROUP, {})
    found: list[str] = []
    for value in points.values():
        package = root / value.split(":")[0].replace(".", "/")
        for source in sorted(package.glob("*.py")):
            for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "GameInfo"):
                    continue
                for keyword in node.keywords:
                    if keyword.arg == "compiled":
                        modules = ast.literal_eval(keyword.value)
                        if not isinstance(modules, (tuple, list)) or not all(isinstance(m, str) for m in modules):
                            raise ValueError(f"{source}: compiled= must be a literal tuple of module names")
                        found.extend(m for m in modules if m not in found)
    return tuple(found)


def _compiled_by_the_build(app_dir: Path = _APP) -> tuple[str, ...]:
    """:data:`CORE`, then the other modules the manifest lists (the games' compiled modules)."""
    try:
        sources = json.loads((app_dir / MANIFEST).read_text())["sources"]
    except (OSError, ValueError, KeyError, TypeError):
        return CORE
    return CORE + tuple(sorted(m for m in sources if m not in CORE and isinstance(m, str)))


#: every module of ``app`` the build compiled: :data:`CORE` and the games' (from the manifest)
COMPILED: tuple[str, ...] = _compiled_by_the_build()
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
    expected = _compiled_by_the_build(app_dir)
    built = [module for module in expected if _extension_of(module, app_dir) is not None]
    if not built:
        return "not compiled (installed without a C compiler, or the compilation failed: pip install -v -e . shows why)"
    try:
        manifest: dict[str, Any] = json.loads((app_dir / MANIFEST).read_text())
        hashes: dict[str, str] = manifest["sources"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"{MANIFEST} is missing or unreadable"
    if manifest.get("group") != GROUP or _extension_of(GROUP + "__mypyc", app_dir) is None:
        return f"the shared library of the compiled modules ({GROUP}__mypyc) is missing"
    missing = [module for module in expected if module not in built]
    if missing:
        return f"no compiled module for {', '.join(missing)}"
    for module in expected:
        try:
            digest = hashlib.sha256(_source_path(module, app_dir).read_bytes()).hexdigest()
        except OSError:
            return f"{module}: source unreadable"
        if hashes.get(module) != digest:
            return f"{module} changed since it was compiled (reinstall: pip install -e .)"
    return None


class _SourceFinder:
    """Loads every module of ``app`` that has a compiled ``.so`` beside its ``.py`` from the ``.py``
    (a meta path finder)."""

    @classmethod
    def find_spec(cls, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("app.") or (fullname not in COMPILED and _extension_of(fullname) is None):
            return None
        source = _source_path(fullname)
        if not source.is_file():
            return None
        return importlib.util.spec_from_file_location(fullname, source)

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
    loaded = [name for name, module in list(sys.modules.items())
              if (name == "app" or name.startswith("app.")) and compiled(module)]
    if loaded:
        raise RuntimeError(f"already imported compiled: {', '.join(loaded)}")
    ASKED = True
    _use_source(why)


def compiled(module: Any) -> bool:
    """Whether ``module`` was loaded from a C extension."""
    return isinstance(getattr(module, "__loader__", None), importlib.machinery.ExtensionFileLoader)


def compiled_report(modules: tuple[str, ...]) -> dict[str, bool]:
    """Module -> whether it runs compiled now, for the modules given (a game's ``GameInfo.compiled``);
    each is imported."""
    return {name: compiled(importlib.import_module(name)) for name in modules}
