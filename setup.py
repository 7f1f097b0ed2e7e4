"""Build of Bannerfall's compiled modules: the per-action hot paths, compiled with mypyc.

Everything else about the package is in ``pyproject.toml``. The modules in ``app/_native.py``'s
``CORE`` (the JSON diff, the audiences' book ...) and those each of Bannerfall's games declares in its
``GameInfo(compiled=...)`` (their views) are compiled by mypyc (the
mypy project's compiler for type-annotated Python) into one C extension; the ``.py`` files stay the
source of truth and are what runs whenever the compiled code is missing, stale or turned off
(``app/_native.py``). A machine without a C compiler installs and runs the same package in pure
Python: a failed compilation is a warning, never a failed install. ``BANNERFALL_PURE_PYTHON=1`` at
install time skips the compilation. Why and what it measured: ``docs/decisions.md``, "Compiled hot
paths".
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "app"))
from _native import CORE, GROUP, MANIFEST, declared_games_compiled  # noqa: E402  (imports nothing of app)

sys.path.pop(0)
#: the runtime's hot paths and the modules Bannerfall's own games declare compiled (GameInfo.compiled)
COMPILED = CORE + tuple(m for m in declared_games_compiled(ROOT) if m not in CORE)


def _mypyc_extensions() -> list:
    if os.environ.get("BANNERFALL_PURE_PYTHON", "").strip() not in ("", "0"):
        # an earlier build's modules would still run: without its manifest they never do
        (ROOT / "app" / MANIFEST).unlink(missing_ok=True)
        print("bannerfall: BANNERFALL_PURE_PYTHON is set: nothing compiled", file=sys.stderr)
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("bannerfall: mypyc is not installed: nothing compiled (pure Python)", file=sys.stderr)
        return []
    paths = [module.replace(".", "/") + ".py" for module in COMPILED]
    # a config of its own: the project's [tool.mypy] loads the pydantic plugin, which the isolated build
    # environment does not have; third-party packages are typed Any here (the checks are mypy's job in CI)
    options = ["--config-file", str(ROOT / "mypyc.ini")]
    try:
        return mypycify(options + paths, opt_level="3", debug_level="0", group_name=GROUP)
    except BaseException as exc:  # mypyc exits on a type error: install pure Python instead
        print(f"bannerfall: mypyc could not compile the hot paths ({exc!r}): pure Python", file=sys.stderr)
        return []


class OptionalBuildExt(build_ext):
    """``build_ext`` that writes the manifest of the compiled sources' hashes beside them
    (``app/_native.json``, read by ``app/_native.py``), and that warns instead of failing when the C
    compiler does: the package then runs in pure Python."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no Python headers ...
            if self.inplace:  # what an earlier build left must not run beside a half-made one
                (ROOT / "app" / MANIFEST).unlink(missing_ok=True)
            print(f"bannerfall: compiling the hot paths failed ({exc}): pure Python", file=sys.stderr)
            return
        if not self.extensions:
            return
        manifest = {module: hashlib.sha256((ROOT / (module.replace(".", "/") + ".py")).read_bytes()).hexdigest()
                    for module in COMPILED}
        text = json.dumps({"group": GROUP, "sources": manifest}, indent=1, sort_keys=True) + "\n"
        # beside the modules just built: the source tree for an editable install (in place), else the
        # build directory only — a wheel built from a tree must not vouch for that tree's older .so files
        target = ROOT / "app" / MANIFEST if self.inplace else Path(self.build_lib) / "app" / MANIFEST
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            raise RuntimeError(f"{ext.name}: {exc}") from exc


setup(ext_modules=_mypyc_extensions(), cmdclass={"build_ext": OptionalBuildExt})
