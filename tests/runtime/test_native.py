"""The compiled hot paths (``app/_native.py``, ``setup.py``): when they run, and that they send exactly
what the sources send (docs/decisions.md, "Compiled hot paths")."""
from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import app._native as native
from tests.runtime import native_parity

ROOT = Path(__file__).resolve().parents[2]


def _fake_app(tmp_path: Path, *, built: tuple[str, ...] = native.COMPILED, manifest: bool = True,
              shared: bool = True, group: str = native.GROUP) -> Path:
    """A copy of the compiled modules' sources under ``tmp_path/app``, a stand-in ``.so`` beside the
    ones in ``built`` (and, with ``shared``, the group's shared library) and, with ``manifest``, the
    manifest setup.py would write for ``group``."""
    app_dir = tmp_path / "app"
    hashes = {}
    for module in native.COMPILED:
        source = ROOT / (module.replace(".", "/") + ".py")
        target = tmp_path / (module.replace(".", "/") + ".py")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
        hashes[module] = hashlib.sha256(source.read_bytes()).hexdigest()
        if module in built:
            target.with_name(target.stem + importlib.machinery.EXTENSION_SUFFIXES[0]).write_bytes(b"")
    if shared:
        (app_dir / ("_native__mypyc" + importlib.machinery.EXTENSION_SUFFIXES[0])).write_bytes(b"")
    if manifest:
        (app_dir / native.MANIFEST).write_text(json.dumps({"group": group, "sources": hashes}))
    return app_dir


def test_compiled_modules_run_when_every_one_is_built_from_the_sources_beside_it(tmp_path):
    assert native.why_source(_fake_app(tmp_path), {}) is None


def test_an_edited_source_makes_every_module_run_from_source(tmp_path):
    app_dir = _fake_app(tmp_path)
    edited = tmp_path / "app" / "delta.py"
    edited.write_text(edited.read_text() + "\n# edited after the build\n")
    assert native.why_source(app_dir, {}) == "app.delta changed since it was compiled (reinstall: pip install -e .)"


def test_the_sources_run_without_a_build_a_manifest_or_with_the_variable_set(tmp_path):
    assert native.why_source(_fake_app(tmp_path / "a", built=()), {}).startswith("not compiled (installed without")
    assert native.why_source(_fake_app(tmp_path / "b", built=native.COMPILED[1:]), {}) == \
        f"no compiled module for {native.COMPILED[0]}"
    assert native.why_source(_fake_app(tmp_path / "c", manifest=False), {}) == \
        f"{native.MANIFEST} is missing or unreadable"
    missing = f"the shared library of the compiled modules ({native.GROUP}__mypyc) is missing"
    assert native.why_source(_fake_app(tmp_path / "e", shared=False), {}) == missing
    assert native.why_source(_fake_app(tmp_path / "f", group="other"), {}) == missing
    app_dir = _fake_app(tmp_path / "d")
    assert native.why_source(app_dir, {"BANNERFALL_PURE_PYTHON": "1"}) == "BANNERFALL_PURE_PYTHON is set"
    assert native.why_source(app_dir, {"BANNERFALL_PURE_PYTHON": "0"}) is None


def test_the_suite_runs_the_sources():
    import app.delta
    import app.games.conquest.view

    assert native.STATUS.startswith("source: ") and native.ASKED
    assert not native.compiled(app.delta) and app.delta.__file__.endswith("delta.py")
    assert app.games.conquest.view.__file__.endswith("view.py")


def test_sources_cannot_be_preferred_once_a_compiled_module_is_loaded(monkeypatch):
    stand_in = type(sys)("app.delta")
    stand_in.__loader__ = importlib.machinery.ExtensionFileLoader("app.delta", "delta.so")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "app.delta", stand_in)
    with pytest.raises(RuntimeError, match="already imported compiled: app.delta"):
        native.prefer_source()


def test_the_compiled_modules_send_exactly_what_the_sources_send():
    """Seeded matches of every game (Conquest with every special too) through the runtime, every message
    to every socket digested, compiled (a fresh interpreter) against the sources (here); neither may
    leave objects in reference cycles. In CI the
    package is installed with its compiled modules, so they must be there; only an explicit
    ``BANNERFALL_PURE_PYTHON`` skips this."""
    if os.environ.get("BANNERFALL_PURE_PYTHON", "").strip() not in ("", "0"):
        pytest.skip("BANNERFALL_PURE_PYTHON is set: nothing compiled to compare")
    env = {k: v for k, v in os.environ.items() if k != "BANNERFALL_PURE_PYTHON"}
    done = subprocess.run([sys.executable, "-m", "tests.runtime.native_parity", "5", "400"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    compiled = json.loads(done.stdout.strip().splitlines()[-1])
    assert compiled["status"] == "compiled", (
        f"the compiled hot paths are not in use ({compiled['status']}): rebuild them with pip install -e . "
        "(or set BANNERFALL_PURE_PYTHON=1 to skip this comparison while editing the compiled modules)")
    assert compiled["compiled"] == list(native.COMPILED)
    here = native_parity.digests(5, 400)
    assert sum(here["records"].values()) > 2000  # matches long enough to reach battles, sieges, ends
    assert compiled["records"] == here["records"]
    assert compiled["digests"] == here["digests"]
    # neither leaves reference cycles: a closure compiled by mypyc is one (its environment and the
    # function refer to each other), which made ~50 objects of cyclic garbage per Conquest action
    # and the node's young collections 10x longer (docs/benchmarks/server.md, 1 Dec 2026, night)
    assert sum(compiled["cyclic"].values()) <= 20, compiled["cyclic"]
    assert sum(here["cyclic"].values()) <= 20, here["cyclic"]
