"""``bench/bench_matrix.py`` takes its memory columns from ``bench/bench_memory.py``: the options,
the order (after each mode's throughput phases), where the figures land and what the targets judge.
No server is started: the measurements are replaced by recorders."""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import ROOT


def _load(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


matrix = _load("bench_matrix")
memory = sys.modules["bench_memory"]


def _row(game: str, mode: str) -> dict[str, Any]:
    """A throughput row as :func:`bench_matrix.measure_game` leaves it (the fields the report reads)."""
    return {"game": game, "mode": mode, "kb_per_live_match": None, "kb_per_idle_socket": None,
            "kb_per_live_match_setup": 188.7, "kb_per_idle_socket_setup": 31.0,
            "actions_per_server_cpu_s": 900.0, "median_update_bytes": 600, "p99_ms_half_load": 4.0,
            "loop_lag_max_ms": 9.0, "sockets": 16, "actions_per_s": 500.0, "bytes_per_socket_per_action": 700.0,
            "gc_max_pause_ms": 3.0, "setup_cpu_ms_per_match": 10.0, "loadavg_before": (0.5, 0.5, 0.5)}


def _mem(game: str, mode: str, per_match: float = 72.0, per_socket: float = 19.5) -> dict[str, Any]:
    return {"game": game, "mode": mode, "matches": 200, "sockets": 800, "kb_per_live_match": per_match,
            "kb_per_live_match_second_half": per_match - 5, "kb_per_idle_socket": per_socket, "played": None,
            "loadavg": (0.1, 0.1, 0.1), "traced": False}


def test_memory_options_default_to_the_defined_measurement():
    args = matrix.parse_args([])
    assert (args.memory_matches, args.memory_warm_matches, args.memory_warm_seconds) == (200, 8, 3.0)
    opts = memory.options(args, "memory-")
    assert (opts.matches, opts.warm_matches, opts.play_seconds, opts.settle) == (200, 8, 5.0, 1.0)
    # production mode's servers come from the matrix's own options
    args = matrix.parse_args(["--database-url", "postgresql://u@h:1", "--redis-url", "redis://h:2/3"])
    opts = memory.options(args, "memory-")
    assert (opts.database_url, opts.redis_url) == ("postgresql://u@h:1", "redis://h:2/3")


def test_quick_measures_few_matches_unless_told():
    args = matrix.parse_args(["--quick"])
    assert args.memory_matches == 20 and args.memory_play_seconds == 0.0
    assert matrix.parse_args(["--quick", "--memory-matches", "50"]).memory_matches == 50
    assert matrix.parse_args(["--quick", "--memory-matches", "0"]).memory_matches == 0
    assert "ROUGH" in matrix.memory_note(args)
    assert "ROUGH" not in matrix.memory_note(matrix.parse_args([]))
    # a figure from fewer matches than the defined measurement is marked rough in the targets table
    row = _row("warrior", "embedded")
    matrix.fill_memory(row, {**_mem("warrior", "embedded", per_match=179.0), "matches": 20})
    table = matrix.targets_table(matrix.targets({}, [row], None))
    assert "| 179.0 | 100 | **FAIL** (rough: few matches) |" in table
    assert "| 19.5 | 25 | PASS (rough: few matches) |" in table
    matrix.fill_memory(row, _mem("warrior", "embedded"))
    assert "rough" not in matrix.targets_table(matrix.targets({}, [row], None))


def test_memory_runs_after_each_modes_phases(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    calls: list[tuple[str, ...]] = []

    def run_mode(mode: str, games: list[str], args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
        calls.append(("phases", mode, *games))
        rows = [_row(g, mode) for g in games]
        if mode == "production":
            rows[1] = {"game": games[1], "mode": mode, "error": "RuntimeError('x')"}
        return rows

    def run_one(game: str, mode: str, opts: argparse.Namespace, tmp: Path) -> dict[str, Any]:
        calls.append(("memory", mode, game))
        assert opts.matches == 200 and opts.warm_matches == 8
        if game == "warrior" and mode == "embedded":
            raise RuntimeError("server did not start")
        return _mem(game, mode, per_match=150.0 if game == "provinces" else 72.0)

    monkeypatch.setattr(matrix, "run_mode", run_mode)
    monkeypatch.setattr(memory, "run_one", run_one)
    args = matrix.parse_args(["--games", "provinces,conquest,warrior", "--modes", "embedded,production"])
    rows = matrix.measure_modes(args, tmp_path)

    assert calls == [("phases", "embedded", "provinces", "conquest", "warrior"),
                     ("memory", "embedded", "provinces"), ("memory", "embedded", "conquest"),
                     ("memory", "embedded", "warrior"),
                     ("phases", "production", "provinces", "conquest", "warrior"),
                     ("memory", "production", "provinces"), ("memory", "production", "warrior")]
    by = {(r["game"], r["mode"]): r for r in rows}
    r = by["conquest", "embedded"]
    assert (r["kb_per_live_match"], r["kb_per_idle_socket"]) == (72.0, 19.5)
    assert r["kb_per_live_match_setup"] == 188.7  # the old growth figure stays, under its own name
    assert r["memory"]["matches"] == 200
    failed = by["warrior", "embedded"]
    assert failed["kb_per_live_match"] is None and "server did not start" in failed["memory"]["error"]
    assert "memory" not in by["conquest", "production"]  # its throughput failed: nothing to fill

    checks = {(c["game"], c["mode"], c["key"]): c for c in matrix.targets({}, rows, None)}
    assert checks["provinces", "embedded", "match"]["value"] == 150.0
    assert checks["provinces", "embedded", "match"]["pass"] is False
    assert checks["conquest", "embedded", "match"]["pass"] is True
    assert checks["conquest", "embedded", "socket"]["pass"] is True
    assert checks["warrior", "embedded", "match"]["pass"] is None  # no value, not the set-up growth
    table = matrix.table({}, rows)
    assert "| 150.0 |" in table and "188.7" not in table


def test_memory_matches_0_skips_the_measurement(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setattr(matrix, "run_mode", lambda mode, games, args, tmp: [_row(g, mode) for g in games])

    def run_one(*_: Any) -> dict[str, Any]:
        raise AssertionError("measured with --memory-matches 0")

    monkeypatch.setattr(memory, "run_one", run_one)
    args = matrix.parse_args(["--games", "warrior", "--modes", "embedded", "--memory-matches", "0"])
    (row,) = matrix.measure_modes(args, tmp_path)
    assert row["kb_per_live_match"] is None and row["memory"] is None
    assert {c["key"]: c["pass"] for c in matrix.targets({}, [row], None)}["match"] is None
    assert "not measured" in matrix.memory_note(args)


def test_each_transport_is_measured_with_every_game_and_mode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """``--transports lean,asgi``: every mode's phases run once per transport, each server started
    with ``BANNERFALL_SOCKET_TRANSPORT`` set to it (restored afterwards); rows, table and targets say
    which transport they measured."""
    import os

    seen: list[tuple[str, str | None]] = []

    def run_mode(mode: str, games: list[str], args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
        seen.append((mode, os.environ.get("BANNERFALL_SOCKET_TRANSPORT")))
        return [_row(g, mode) for g in games]

    monkeypatch.setattr(matrix, "run_mode", run_mode)
    monkeypatch.setenv("BANNERFALL_SOCKET_TRANSPORT", "auto")
    args = matrix.parse_args(["--games", "provinces", "--modes", "embedded,production", "--memory-matches", "0",
                              "--transports", "lean,asgi"])
    rows = matrix.measure_modes(args, tmp_path)
    assert seen == [("embedded", "lean"), ("production", "lean"), ("embedded", "asgi"), ("production", "asgi")]
    assert os.environ["BANNERFALL_SOCKET_TRANSPORT"] == "auto"
    assert [r["transport"] for r in rows] == ["lean", "lean", "asgi", "asgi"]
    table = matrix.table({}, rows)
    assert "Bannerfall provinces embedded (asgi) (16 sockets)" in table
    assert "Bannerfall provinces production (lean) (16 sockets)" in table
    assert {c["mode"] for c in matrix.targets({}, rows, None)} == {
        "embedded (lean)", "production (lean)", "embedded (asgi)", "production (asgi)"}


def _generator_result(latencies: list[float], lag_max: float) -> dict[str, Any]:
    return {"sent": len(latencies), "acked": len(latencies), "acked_in_window": len(latencies),
            "acks_per_s": 1.0, "sent_per_s": 1.0, "bytes_in_window": 10, "matches_ended": 0,
            "loadgen_cpu_s": 1.0, "max_backlog": 0, "messages_in_window": {"ack": len(latencies)},
            "latency": {"p99_ms": max(latencies)}, "latency_samples": latencies, "sched_latency": None,
            "sched_latency_samples": None,
            "loadgen_loop_lag": {"max_ms": lag_max, "p99_ms": lag_max / 2, "over_10ms": int(lag_max > 10)}}


def test_several_bot_generators_give_percentiles_of_all_their_samples():
    """The matrix splits Conquest and Warrior over several generator processes (``--bot-generators``):
    their latencies are merged sample by sample (not the worst generator's p99), the samples do not
    stay in the result, and the generators' own loop lag is reported beside them."""
    bench_server = sys.modules["bench_server"]
    fast = [1.0] * 990  # one generator: 990 acks at 1 ms
    slow = [50.0] * 10  # the other: 10 acks at 50 ms (1 % of all)
    merged = bench_server.merge_results([_generator_result(fast, 3.0), _generator_result(slow, 12.0)])
    assert merged["latency"]["n"] == 1000
    assert merged["latency"]["p99_ms"] == 1.0  # nearest rank: the 990th of 1,000
    assert merged["latency"]["p999_ms"] == 50.0
    assert "latency_samples" not in merged
    assert merged["loadgen_loop_lag"] == {"max_ms": 12.0, "p99_ms": 6.0, "over_10ms": 1, "generators": 2}
    assert matrix.parse_args(["--games", "warrior"]).bot_generators == 4


def test_a_reference_measured_before_and_after_is_judged_by_the_mean_of_both_runs():
    first = {"actions_per_server_cpu_s": 3000.0, "connections": 200}
    last = {"actions_per_server_cpu_s": 3600.0, "connections": 200}
    both = matrix.bracket(first, last)
    assert both["actions_per_server_cpu_s"] == 3300.0 and both["runs"] == [3000.0, 3600.0]
    assert both["drift"] == pytest.approx(1.2) and both["connections"] == 200
    assert matrix.fastapi_ratio({"actions_per_server_cpu_s": 3300.0}, {"fastapi": both}) == 1.0
    assert matrix.bracket(first, {"error": "x"}) is first  # a failed second run: the first stands


def test_every_benchmark_records_the_dependency_versions_it_ran_with(monkeypatch: pytest.MonkeyPatch) -> None:
    """``machine_info`` (the ``machine`` block of every benchmark's JSON) names the installed version
    of each distribution the figures depend on, and None for one that is not installed."""
    from importlib import metadata

    server = sys.modules["bench_server"]
    versions = server.machine_info()["versions"]
    assert set(versions) == set(server.VERSIONED)
    assert versions["fastapi"] == metadata.version("fastapi")
    assert versions["uvicorn"] == metadata.version("uvicorn")
    monkeypatch.setattr(server, "VERSIONED", ("no-such-distribution-bannerfall",))
    assert server.dependency_versions() == {"no-such-distribution-bannerfall": None}
