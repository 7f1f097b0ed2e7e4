"""The JavaScript SDK's ``applyPatch`` (clients/js/src/patch.ts: fast-json-patch behind the checks
RFC 6901 asks for), as the web client loads it (app/web/js/sdk/bannerfall-client.js), is proven
against app/delta.py, not trusted: patches made by ``app.delta.diff`` over the views of seeded
random matches of every game (a seat and a spectator) and over random JSON trees with awkward keys
(``a/b``, ``~0``, ``""``, ``-``, ``01``, ``__proto__``) are applied in node; every result must be
the Python result, except that a path through ``__proto__`` (which fast-json-patch refuses to touch)
throws ``PatchError`` (the connection then resumes and gets the full state). Bad patches must throw
``PatchError`` in node where Python raises, and leave the document alone. Skipped when ``node`` is
not installed."""
from __future__ import annotations

import json
import random
import shutil
import subprocess
from typing import Any

import pytest

from app.delta import PatchError, apply_patch, diff
from app.games import registry
from app.games.base import SPECTATOR
from tests.conftest import ROOT
from tests.games.test_conformance import random_step

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

RUNNER = """
import { readFileSync } from "node:fs";
import { applyPatch, PatchError } from "./sdk.mjs";
const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = cases.map(({ doc, patch }) => {
  const before = JSON.stringify(doc);
  try {
    const copy = applyPatch(doc, patch);
    const unchanged = JSON.stringify(doc) === before;
    const inPlace = applyPatch(JSON.parse(before), patch, { inPlace: true });
    return { ok: true, doc: copy, same: JSON.stringify(inPlace) === JSON.stringify(copy), unchanged };
  } catch (err) {
    return { ok: false, patchError: err instanceof PatchError, unchanged: JSON.stringify(doc) === before };
  }
});
process.stdout.write(JSON.stringify(out));
"""


def run_node(tmp_path, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    (tmp_path / "sdk.mjs").write_text((ROOT / "app" / "web" / "js" / "sdk" / "bannerfall-client.js").read_text())
    (tmp_path / "run.mjs").write_text(RUNNER)
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    assert NODE is not None
    res = subprocess.run([NODE, str(tmp_path / "run.mjs"), str(tmp_path / "cases.json")], capture_output=True,
                         text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert len(out) == len(cases)
    return out


def norm(x: Any) -> Any:
    """JSON as JavaScript sees it: 1 and 1.0 are one number, true is not 1; key order ignored."""
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return (type(x).__name__, x)
    if isinstance(x, int | float):
        return ("num", float(x))
    if isinstance(x, list):
        return ("list", [norm(v) for v in x])
    return ("dict", sorted((k, norm(v)) for k, v in x.items()))


KEYS = ["a", "b", "a/b", "~0", "~1x", "", "-", "01", "0", "__proto__", "constructor", "é"]


def random_tree(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 3 or r < 0.3:
        return rng.choice([0, 1, 1.0, 2.5, -3, True, False, None, "", "x", "~/", [], {}])
    if r < 0.65:
        return {k: random_tree(rng, depth + 1) for k in rng.sample(KEYS, rng.randint(0, 5))}
    return [random_tree(rng, depth + 1) for _ in range(rng.randint(0, 5))]


def mutate(rng: random.Random, x: Any) -> Any:
    if rng.random() < 0.15:
        return random_tree(rng, 2)
    if isinstance(x, dict):
        y = {k: (mutate(rng, v) if rng.random() < 0.5 else v) for k, v in x.items() if rng.random() < 0.85}
        for k in rng.sample(KEYS, rng.randint(0, 2)):
            y[k] = random_tree(rng, 2)
        return y
    if isinstance(x, list):
        items = [mutate(rng, v) if rng.random() < 0.4 else v for v in x]
        if rng.random() < 0.3:
            return items[:rng.randint(0, len(items))]
        return items + [random_tree(rng, 2)] * rng.randint(0, 2)
    return x


def view_cases() -> list[dict[str, Any]]:
    cases = []
    for game_id, game in sorted(registry().items()):
        for i in range(3):
            seats = min(max(game.info.min_seats, 2 + i % 2), game.info.max_seats)
            seed = b"jspatch-%s-%d" % (game_id.encode(), i)
            rng = random.Random(seed)
            state = game.setup(seats, None, seed)
            viewers = (0, SPECTATOR)
            last = {v: json.loads(json.dumps(game.view(state, v))) for v in viewers}
            for _ in range(25):
                if game.outcome(state) is not None:
                    break
                step = random_step(game, state, seats, rng, verify=False)
                assert step is not None
                state, _ = game.apply(state, *step)
                for v in viewers:
                    view = json.loads(json.dumps(game.view(state, v)))
                    cases.append({"doc": last[v], "patch": diff(last[v], view), "want": view})
                    last[v] = view
    return cases


def test_apply_patch_in_node_gives_what_python_gives(tmp_path):
    cases = view_cases()
    rng = random.Random(11)
    for _ in range(1500):
        old = random_tree(rng)
        new = mutate(rng, old)
        cases.append({"doc": old, "patch": diff(old, new), "want": new})
    assert sum(1 for c in cases if c["patch"]) > 1000
    escaped = [op["path"] for c in cases for op in c["patch"] if "~0" in op["path"] or "~1" in op["path"]]
    assert escaped and any("__proto__" in op["path"] for c in cases for op in c["patch"])
    wire = [{"doc": c["doc"], "patch": json.loads(json.dumps(c["patch"]))} for c in cases]
    refused = 0
    for case, got in zip(cases, run_node(tmp_path, wire), strict=True):
        assert norm(apply_patch(case["doc"], case["patch"])) == norm(case["want"])  # the Python side
        if any("__proto__" in op["path"].split("/") for op in case["patch"]):
            assert got == {"ok": False, "patchError": True, "unchanged": True}, (case, got)
            refused += 1
            continue
        assert got["ok"] and got["same"] and got["unchanged"], (case, got)
        assert norm(got["doc"]) == norm(case["want"]), case
    assert 0 < refused < len(cases) // 10


BAD = [
    [{"op": "remove", "path": "/zz"}], [{"op": "replace", "path": "/a/2", "value": 0}],
    [{"op": "add", "path": "/a/01", "value": 0}], [{"op": "add", "path": "/a/3", "value": 0}],
    [{"op": "move", "path": "/a", "from": "/b"}], [{"op": "add", "path": "a", "value": 1}],
    [{"op": "replace", "path": "/b/c/d", "value": 1}], [{"op": "add", "path": "/b/x"}],
    [{"op": "remove", "path": ""}], [{"op": "remove", "path": "/a/-"}], [{"op": "remove", "path": "/a/x"}],
    [{"op": "add", "path": "/b/c", "value": 1}, {"op": "remove", "path": "/nope"}],  # the first applied, then not
    [{"op": "remove", "path": "/__proto__"}], [{"op": "replace", "path": "/constructor", "value": 1}],
]


def test_bad_patches_throw_in_node_where_python_raises_and_change_nothing(tmp_path):
    doc = {"a": [1, 2], "b": {"c": 1}}
    for patch in BAD:
        with pytest.raises(PatchError):
            apply_patch(doc, patch)
    good = [{"op": "add", "path": "/a/-", "value": 3}, {"op": "add", "path": "/a/0", "value": 0},
            {"op": "add", "path": "/constructor", "value": {"own": True}},
            {"op": "replace", "path": "/a/1", "value": 9}]
    proto = [{"op": "add", "path": "/__proto__", "value": {"polluted": True}}]  # Python takes it: a key
    out = run_node(tmp_path, [{"doc": doc, "patch": p} for p in [*BAD, proto]] + [{"doc": doc, "patch": good}])
    for patch, got in zip([*BAD, proto], out, strict=False):
        assert got == {"ok": False, "patchError": True, "unchanged": True}, patch
    assert out[-1]["ok"] and out[-1]["unchanged"]
    want = {"a": [0, 9, 2, 3], "b": {"c": 1}, "constructor": {"own": True}}
    assert out[-1]["doc"] == apply_patch(doc, good) == want
