"""The command line as a newcomer and an operator meet it: every mistake is one line on stderr with
a non-zero exit code, fast; read commands never create a database; short ids work; the output is
words, not Python. Real processes, real sockets, the real local Postgres and Redis."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid

import httpx
import pytest

from app.config import Settings
from app.games import registry
from tests.conftest import PG_ADMIN_URL, ROOT, ServerProcess, free_port
from tests.timing import scaled

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
for _name in ("BANNERFALL_DATABASE_URL", "BANNERFALL_REDIS_URL", "BANNERFALL_PORT", "BANNERFALL_DEBUG"):
    ENV.pop(_name, None)


def cli(*args: str, cwd=None, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=cwd or ROOT, check=False, capture_output=True,
                          text=True, timeout=timeout, env={**ENV, **(env or {})})


def one_line_error(res: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr and res.stderr.startswith("bannerfall: ")
    return lines[0]


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory):
    """A server whose bots think 0.2 s per move (so a demo can be interrupted mid-match)."""
    db = tmp_path_factory.mktemp("clidb") / "bannerfall.db"
    srv = ServerProcess(f"sqlite+aiosqlite:///{db}", env={"BANNERFALL_BOT_DELAY_SECONDS": "0.2"}).start()
    srv.db_file = db
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def finished_match(sqlite_server):
    """A demo played on the server through a URL without scheme and with a trailing slash, the game
    named by its title's case."""
    res = cli("demo", "--url", f"127.0.0.1:{sqlite_server.port}/", "--game", "Provinces", "--players", "2",
              "--options", '{"max_rounds": 2}', timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("match ") and "started" in ln)
    short = line.split()[1]
    assert len(short) == 8
    return short, res.stdout


# --- item 6: --url ---------------------------------------------------------------------------

def test_demo_unreachable_url_fails_in_one_line_within_five_seconds():
    started = time.monotonic()
    res = cli("demo", "--url", "http://127.0.0.1:1", timeout=30)
    elapsed = time.monotonic() - started
    assert res.returncode == 1  # a server that is not there: the machine, not the command line
    line = one_line_error(res)
    assert "http://127.0.0.1:1" in line and "connection refused" in line
    assert elapsed < scaled(5), elapsed  # at once (no 3 s wait), interpreter start included


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:8000", "http://"])
def test_demo_url_that_is_not_http_is_refused(url):
    res = cli("demo", "--url", url, timeout=30)
    assert res.returncode == 2
    assert url in one_line_error(res)


def test_demo_url_without_scheme_and_with_trailing_slash_plays(finished_match):
    _short, out = finished_match
    assert "standings:" in out
    assert "//healthz" not in out


# --- item 9: bad demo arguments, Ctrl-C ------------------------------------------------------

def _lobbies(url: str, status: str = "all") -> list[dict]:
    """Every lobby on the server (as a fresh guest)."""
    token = httpx.post(url + "/api/v1/players", json={"name": "counter"}, timeout=10).json()["token"]
    resp = httpx.get(url + "/api/v1/lobbies", params={"status": status}, timeout=10,
                     headers={"Authorization": f"Bearer {token}"})
    resp.raise_for_status()
    return resp.json()["items"]


def test_unknown_bot_creates_nothing_on_the_server(sqlite_server):
    before = [lobby["id"] for lobby in _lobbies(sqlite_server.url)]
    res = cli("demo", "--url", sqlite_server.url, "--bot", "genius", timeout=30)
    assert res.returncode == 2
    line = one_line_error(res)
    assert "genius" in line and "random" in line and "smart" in line
    assert [lobby["id"] for lobby in _lobbies(sqlite_server.url)] == before


def test_games_lists_every_installed_game_and_says_why_one_is_not(tmp_path):
    res = cli("games", timeout=30)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert [ln.split()[0] for ln in res.stdout.splitlines()] == list(registry())
    # a distribution whose entry point does not import, and one that names another game's id
    from tests.games.game_entry_points import write_dist

    write_dist(tmp_path / "a", "ghost", "no_such_module:GAME")
    write_dist(tmp_path / "b", "provinces", "app.games.warrior:GAME", dist="test-impostor")
    res = cli("games", timeout=30, env={"PYTHONPATH": os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b"),
                                                                        str(ROOT)])})
    assert res.returncode == 1
    assert [ln.split()[0] for ln in res.stdout.splitlines()] == list(registry())  # the others are all there
    problems = res.stderr.splitlines()
    assert len(problems) == 2 and all(p.startswith("not registered: entry point ") for p in problems), problems
    assert any("ghost" in p and "could not be loaded" in p for p in problems)
    assert any("provinces = app.games.warrior:GAME" in p and "differs from the game's id 'warrior'" in p
               for p in problems)


def test_unknown_game_lists_the_games():
    res = cli("demo", "--game", "chess", timeout=30)
    assert res.returncode == 2
    line = one_line_error(res)
    assert all(g in line for g in registry())


@pytest.mark.parametrize("args,words", [(["--players", "9"], "2 to 6"), (["--options", "{"], "not JSON"),
                                        (["--options", '{"no_such_option": 1}'], "no_such_option")])
def test_bad_demo_arguments_are_one_line(args, words):
    res = cli("demo", *args, timeout=30)
    assert res.returncode == 2
    assert words in one_line_error(res)


def test_ctrl_c_during_a_demo_is_one_line_and_exit_130(sqlite_server):
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "demo", "--url", sqlite_server.url, "--game", "warrior",
                             "--players", "3"], cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("Warrior:"), first + proc.stderr.read()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.strip() == "bannerfall: interrupted"
    assert "standings:" not in out


# --- item 7: replay / verify -----------------------------------------------------------------

def test_verify_outside_the_server_directory_names_the_database_and_creates_none(tmp_path):
    for command in ("verify", "replay"):
        res = cli(command, "0123abcd", cwd=tmp_path, timeout=30)
        assert res.returncode == 1
        line = one_line_error(res)
        assert str(tmp_path / "bannerfall.db") in line and "--database-url" in line
    assert list(tmp_path.iterdir()) == []


def test_verify_and_replay_take_the_short_id_of_the_web_pages(sqlite_server, finished_match, tmp_path):
    short, _ = finished_match
    res = cli("verify", short, "--database-url", f"sqlite:///{sqlite_server.db_file}", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("OK: " + short)
    res = cli("replay", short, cwd=tmp_path, env={"BANNERFALL_DATABASE_URL": f"sqlite+aiosqlite:///{sqlite_server.db_file}"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "match over:" in res.stdout
    # the last standing: a name (the server's bot, or the demo's own host, also a bot), not a seat
    assert re.match(r"\s+(1st|2nd)\s+(smart-bot-1|smart demo host)\s+\d+ provinces?$", lines[-1]), lines[-1]
    for debug in ("{", "None", "seat 0", "seat 1", ".0 "):
        assert debug not in res.stdout, debug


@pytest.mark.parametrize("game", sorted(registry()))
def test_demo_replay_and_verify_take_every_installed_game(sqlite_server, game, tmp_path):
    """An installed game (Bannerfall's own or one in its own distribution) is in ``demo`` (its own
    bot kinds and seats by default, its test options), ``verify`` and ``replay``, in words."""
    info = registry()[game].info
    res = cli("demo", "--url", sqlite_server.url, "--game", game, "--options", json.dumps(dict(info.test_options)),
              timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    short = next(ln for ln in res.stdout.splitlines() if ln.startswith("match ") and "started" in ln).split()[1]
    standings = res.stdout.splitlines()[res.stdout.splitlines().index("standings:") + 1:]
    assert len(standings) == min(max(3, info.min_seats), info.max_seats) and standings[0].strip().startswith("1st")
    res = cli("verify", short, "--database-url", f"sqlite:///{sqlite_server.db_file}", cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.startswith("OK: " + short), res.stdout + res.stderr
    res = cli("replay", short, "--database-url", f"sqlite:///{sqlite_server.db_file}", cwd=tmp_path)
    assert res.returncode == 0 and "match over:" in res.stdout, res.stdout[-2000:] + res.stderr
    for debug in ("{", "None", "seat 0", "seat 1"):
        assert debug not in res.stdout, debug


def test_ambiguous_and_unknown_short_ids_are_refused_in_one_line(sqlite_server, finished_match, tmp_path):
    short, _ = finished_match
    copy = tmp_path / "copy.db"
    with sqlite3.connect(sqlite_server.db_file) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    with sqlite3.connect(copy) as db:
        full = db.execute("SELECT id FROM matches WHERE id LIKE ?", (short + "%",)).fetchone()[0]
        db.execute("CREATE TEMP TABLE twin AS SELECT * FROM matches WHERE id = ?", (full,))
        db.execute("UPDATE twin SET id = ?", (short + "f" * (len(full) - 8),) if not full.endswith("f" * 4)
                   else (short + "0" * (len(full) - 8),))
        db.execute("INSERT INTO matches SELECT * FROM twin")
    url = f"sqlite:///{copy}"
    res = cli("verify", short, "--database-url", url, cwd=tmp_path)
    assert res.returncode == 2 and "ambiguous" in one_line_error(res)
    res = cli("verify", full[:12], "--database-url", url, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    res = cli("verify", "ffffffff0000", "--database-url", url, cwd=tmp_path)
    assert res.returncode == 1 and "no match ffffffff0000" in one_line_error(res)
    res = cli("verify", "abc", "--database-url", url, cwd=tmp_path)
    assert res.returncode == 2 and "8 or more" in one_line_error(res)


# --- item 8: serve in production mode --------------------------------------------------------

def _pg_url(database: str, port: int | None = None) -> str:
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    if port is not None:
        base = base.rsplit(":", 1)[0] + f":{port}"
    return f"{base}/{database}"


def _serve(env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return cli("serve", env={"BANNERFALL_PORT": str(free_port()), "BANNERFALL_LOG_LEVEL": "info", **env},
               timeout=timeout)


def test_serve_with_a_database_that_does_not_exist_says_create_it():
    name = f"bf_missing_{uuid.uuid4().hex[:8]}"
    res = _serve({"BANNERFALL_DATABASE_URL": _pg_url(name)})
    assert res.returncode == 1
    line = one_line_error(res)
    assert name in line and "does not exist" in line and "createdb" in line


def test_serve_with_postgres_down_says_so():
    port = free_port()
    res = _serve({"BANNERFALL_DATABASE_URL": _pg_url("test", port)})
    assert res.returncode == 1
    line = one_line_error(res)
    assert f"PostgreSQL at 127.0.0.1:{port}" in line and "connection refused" in line


def test_serve_with_redis_unreachable_names_redis_quickly(tmp_path):
    port = free_port()
    started = time.monotonic()
    res = _serve({"BANNERFALL_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'x.db'}",
                  "BANNERFALL_REDIS_URL": f"redis://127.0.0.1:{port}/0"})
    assert res.returncode == 1
    line = one_line_error(res)
    assert f"Redis at redis://127.0.0.1:{port}/0" in line and "BANNERFALL_REDIS_URL" in line
    assert time.monotonic() - started < scaled(10)


def test_serve_on_a_port_in_use_fails_before_ready(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        res = cli("serve", env={"BANNERFALL_PORT": str(port), "BANNERFALL_LOG_LEVEL": "info",
                                "BANNERFALL_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"})
    assert res.returncode == 1
    line = one_line_error(res)
    assert f"port {port}" in line and "already in use" in line
    assert "ready" not in res.stdout + res.stderr.replace(line, "")
    assert not (tmp_path / "x.db").exists()


def test_database_url_without_asyncpg_is_accepted():
    assert Settings(database_url="postgresql://u@h/db").database_url == "postgresql+asyncpg://u@h/db"
    assert Settings(database_url="postgres://u@h:5433/db").database_url == "postgresql+asyncpg://u@h:5433/db"
    assert Settings(database_url="sqlite:///x.db").database_url == "sqlite+aiosqlite:///x.db"
    assert Settings(database_url="postgresql+asyncpg://u@h/db").database_url == "postgresql+asyncpg://u@h/db"


def test_serve_runs_on_a_plain_postgresql_url():
    from tests.conftest import PostgresDatabase

    db = PostgresDatabase()
    db.create()
    srv = ServerProcess(db.url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        srv.start()
        assert httpx.get(srv.url + "/readyz", timeout=10).status_code == 200
    finally:
        srv.stop()
        db.drop()


@pytest.mark.skipif(shutil.which("bannerfall") is None, reason="the console script is not installed")
def test_console_script_gives_the_same_one_line():
    res = subprocess.run(["bannerfall", "demo", "--game", "chess"], check=False, capture_output=True, text=True,
                         timeout=30, env=ENV)
    assert res.returncode == 2 and "unknown game" in one_line_error(res)


def test_ctrl_c_during_a_demo_with_its_own_server_stops_that_server(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "demo", "--game", "conquest", "--players", "4"],
                            cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert " on http://127.0.0.1:" in first, first + proc.stderr.read()
        url = first.rsplit(" on ", 1)[1].strip()
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and err.strip() == "bannerfall: interrupted", err
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/healthz", timeout=5)
    assert list(tmp_path.iterdir()) == []


def test_a_demo_that_fails_before_its_match_starts_closes_its_lobby(sqlite_server, monkeypatch):
    """The server refuses the start (faked here: the only step that is not the server's own): the
    lobby the demo made is closed again, and the error is one line naming the server."""
    import asyncio

    from app import cli as cli_module
    from app.client import ApiError, RestClient

    async def refuse(self, lobby_id):
        raise ApiError(409, "seats_empty", "every seat needs a player or a bot")

    made: list[str] = []
    create = RestClient.create_lobby

    async def create_and_note(self, *args, **kwargs):
        lobby = await create(self, *args, **kwargs)
        made.append(lobby["id"])
        return lobby

    monkeypatch.setattr(RestClient, "start", refuse)
    monkeypatch.setattr(RestClient, "create_lobby", create_and_note)
    with pytest.raises(cli_module.CliError) as err:
        asyncio.run(cli_module._demo(sqlite_server.url, "provinces", 2, "smart", {}, True))
    assert err.value.message == f"{sqlite_server.url} refused: every seat needs a player or a bot (seats_empty)"
    assert len(made) == 1
    lobby = next(x for x in _lobbies(sqlite_server.url) if x["id"] == made[0])
    assert lobby["status"] == "closed", lobby
    assert made[0] not in [x["id"] for x in _lobbies(sqlite_server.url, "open")]


# --- issue 26 item 16: one line for any database URL, one exit-code rule, short spin ids, --version,
# --- game names in any case with "did you mean" ---------------------------------------------

_READ_COMMANDS = [("verify", "0123abcd"), ("replay", "0123abcd"), ("verify-spin", "0123abcd")]


@pytest.mark.parametrize("url", ["mysql://u:s3cret@127.0.0.1/db", "postgresql+psycopg2://u:s3cret@127.0.0.1/db"])
@pytest.mark.parametrize("command", [("serve",), ("migrate",), *_READ_COMMANDS])
def test_a_database_bannerfall_cannot_use_is_one_line_and_exit_2_in_every_command(command, url, tmp_path):
    res = cli(*command, "--database-url", url, cwd=tmp_path, env={"BANNERFALL_PORT": str(free_port())}, timeout=60)
    assert res.returncode == 2, res.stderr
    line = one_line_error(res)
    assert "not a database Bannerfall can use" in line and "s3cret" not in line
    assert list(tmp_path.iterdir()) == []


def test_a_missing_database_exits_1_from_every_command(tmp_path):
    """The one rule (app.cli.EXIT_RULE): what the command needs is not there -> 1, in every command."""
    from concurrent.futures import ThreadPoolExecutor

    name = f"bf_missing_{uuid.uuid4().hex[:8]}"
    missing_pg = _pg_url(name)
    down_pg = _pg_url("test", free_port())
    cases = [(command, ("--database-url", url), words) for command in [("serve",), ("migrate",), *_READ_COMMANDS]
             for url, words in ((missing_pg, "does not exist"), (down_pg, "connection refused"))]
    # a SQLite file that is not there: named, and never created
    cases += [(command, (), "no database at") for command in _READ_COMMANDS]

    def run(case):
        command, extra, _words = case
        return cli(*command, *extra, cwd=tmp_path, env={"BANNERFALL_PORT": str(free_port())})

    with ThreadPoolExecutor(4) as pool:  # independent processes: side by side
        results = list(pool.map(run, cases))
    for (command, extra, words), res in zip(cases, results, strict=True):
        assert res.returncode == 1, (command, extra, res.stderr)
        assert words in one_line_error(res), (command, res.stderr)
    assert list(tmp_path.iterdir()) == []


def test_the_exit_code_rule_is_in_the_help_and_in_the_docs():
    from app.cli import EXIT_RULE

    res = cli("--help")
    assert res.returncode == 0
    assert " ".join(EXIT_RULE.split()[:6]) in " ".join(res.stdout.split())
    docs = (ROOT / "docs" / "operations.md").read_text()
    assert EXIT_RULE in " ".join(docs.split()), "docs/operations.md, 'Exit codes', must state app.cli.EXIT_RULE"


def test_version_is_printed_by_both_spellings():
    from importlib.metadata import version

    for flag in ("--version", "-V"):
        res = cli(flag)
        assert res.returncode == 0 and res.stdout.strip() == f"bannerfall {version('bannerfall')}", res


@pytest.mark.parametrize("args, words", [
    (["--game", "PROVINCES", "--players", "9"], "provinces is for 2 to 6 players"),      # accepted, any case
    (["--game", "Hold'em Conquest", "--players", "9"], "conquest is for 2 to 4 players"),  # the title
    (["--game", " warrior ", "--players", "9"], "warrior is for 2 to 4 players"),
    (["--game", "provnces"], "did you mean 'provinces'?"),
    (["--game", "Conquset"], "did you mean 'conquest'?"),
    (["--game", "holdem conquest"], "did you mean 'conquest'?"),
    (["--bot", "smrt"], "did you mean 'smart'?"),
    (["--bot", "RANDOM", "--players", "9"], "provinces is for 2 to 6 players"),
])
def test_game_and_bot_names_in_any_case_and_did_you_mean(args, words):
    res = cli("demo", *args, timeout=30)
    assert res.returncode == 2
    line = one_line_error(res)
    assert words in line, line
    if "did you mean" in line:  # the whole list too
        assert ", ".join(sorted(registry())) in line or "random, smart" in line


def _spin_on(server) -> dict:
    """A spin of a fresh player on ``server`` (crystals granted by the admin)."""
    player = httpx.post(server.url + "/api/v1/players", json={"name": "spinner"}, timeout=10).json()
    admin = {"Authorization": f"Bearer {server.admin_token}"}
    httpx.post(server.url + f"/api/v1/admin/players/{player['player']['id']}/crystals",
               json={"amount": 20, "reason": "cli test"}, headers=admin, timeout=10).raise_for_status()
    resp = httpx.post(server.url + "/api/v1/players/me/spins", json={"client_seed": "cli"},
                      headers={"Authorization": f"Bearer {player['token']}"}, timeout=10)
    resp.raise_for_status()
    return resp.json()


def test_verify_spin_takes_the_short_id_the_ledger_shows(sqlite_server, tmp_path):
    spin = _spin_on(sqlite_server)
    url = f"sqlite:///{sqlite_server.db_file}"
    for given in (spin["id"][:8], spin["id"][:8].upper(), spin["id"]):
        res = cli("verify-spin", given, "--database-url", url, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        assert res.stdout.startswith(f"spin {spin['id']}:") and "ok: sha256(seed)" in res.stdout
    # two spins sharing the 8 characters: ambiguous (2), with the candidates; none: 1; not an id: 2
    copy = tmp_path / "copy.db"
    with sqlite3.connect(sqlite_server.db_file) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    twin = spin["id"][:8] + ("0" if spin["id"][8] != "0" else "1") + spin["id"][9:]
    with sqlite3.connect(copy) as db:
        db.execute("CREATE TEMP TABLE twin AS SELECT * FROM spins WHERE id = ?", (spin["id"],))
        db.execute("UPDATE twin SET id = ?", (twin,))
        db.execute("INSERT INTO spins SELECT * FROM twin")
    res = cli("verify-spin", spin["id"][:8], "--database-url", f"sqlite:///{copy}", cwd=tmp_path)
    assert res.returncode == 2
    line = one_line_error(res)
    assert "ambiguous" in line and spin["id"][:12] in line and twin[:12] in line
    res = cli("verify-spin", spin["id"][:12], "--database-url", f"sqlite:///{copy}", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    res = cli("verify-spin", "ffffffff", "--database-url", url, cwd=tmp_path)
    assert res.returncode == 1 and "no spin ffffffff" in one_line_error(res)
    res = cli("verify-spin", "abc", "--database-url", url, cwd=tmp_path)
    assert res.returncode == 2 and "8 or more" in one_line_error(res)
