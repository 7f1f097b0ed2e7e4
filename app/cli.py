"""``bannerfall serve | demo | migrate | replay | verify`` (Typer).

Every mistake an operator or a newcomer can make (a server that is not there, a database that does
not exist, a port in use, an unknown game or bot, Ctrl-C) ends with one line on stderr naming what
failed and what to do, and the exit code of :data:`EXIT_RULE`, the same in every command. Set
``BANNERFALL_DEBUG=1`` to get the traceback instead.
"""
from __future__ import annotations

import asyncio
import errno
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn

import typer

#: exit codes (:data:`EXIT_RULE`)
EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130
#: the one rule of exit codes, for every command (shown by ``--help``; docs/operations.md, "Exit codes")
EXIT_RULE = ("Exit codes, the same for every command: 0 done; 1 the command could not do its job, or a check "
             "failed: something it needs is missing or not answering (the database, its tables, Redis, the "
             "server of --url, the port, the match or spin asked for) or verify found a problem; 2 what was "
             "typed or configured is wrong whatever the machine (an unknown command, option, game or bot, a "
             "malformed id, URL, option or setting, an ambiguous short id); 130 interrupted (Ctrl-C).")


cli = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Bannerfall game server.\n\n" + EXIT_RULE)


def version_text() -> str:
    """``bannerfall VERSION`` (the installed package's version, else the source tree's)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"bannerfall {version('bannerfall')}"
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "bannerfall (not installed)"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(version_text())
        raise typer.Exit(0)


@cli.callback()
def _main_options(version: bool = typer.Option(False, "--version", "-V", is_eager=True, callback=_show_version,
                                               help="print the version and exit")) -> None:
    """Bannerfall game server."""


class CliError(Exception):
    """A mistake to report in one line (``message``) with an exit ``code``."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.message, self.code = message, code


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    raise CliError(message, code)


def _say_error(message: str) -> None:
    typer.echo(f"bannerfall: {message}", err=True)


def _debug() -> bool:
    return os.environ.get("BANNERFALL_DEBUG", "") not in ("", "0", "false")


def _settings(**overrides):
    """Settings from the environment plus the given options; a bad value is one line."""
    from pydantic import ValidationError

    from app.config import Settings

    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err.get("loc", ())) or "setting"
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        _fail(f"bad setting BANNERFALL_{field.upper()}: {msg}")


def _run(fn, *args: Any, **kwargs: Any) -> None:
    """Run a command body: CliError -> one line and its code; Ctrl-C -> one line, 130."""
    try:
        fn(*args, **kwargs)
    except CliError as exc:
        _say_error(exc.message)
        raise typer.Exit(exc.code) from None
    except KeyboardInterrupt:
        _say_error("interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None


# --- databases and Redis: where, and one line when they are not right -----------------------

def shown_url(url: str) -> str:
    """A database or Redis URL fit to print (password hidden)."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - any failure becomes one line
        return url.split("@")[-1]


def _causes(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or e in seen:
            continue
        seen.append(e)
        todo += [getattr(e, "orig", None), e.__cause__, e.__context__]
    return seen


def database_problem(exc: BaseException, url: str) -> str:
    """One line saying what is wrong with the database at ``url`` and what to do."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    where = shown_url(url)
    names = {type(e).__name__: e for e in _causes(exc)}
    if "InvalidCatalogNameError" in names:
        return (f"database {u.database!r} does not exist on {u.host or 'localhost'}:{u.port or 5432} ({where}); "
                f"create it first: createdb -h {u.host or 'localhost'} -U {u.username or 'postgres'} {u.database}")
    if "InvalidAuthorizationSpecificationError" in names or "InvalidPasswordError" in names:
        e = names.get("InvalidAuthorizationSpecificationError") or names.get("InvalidPasswordError")
        return f"PostgreSQL refused role {u.username!r} at {where}: {str(e).splitlines()[0]}"
    if "UndefinedTableError" in names or any("no such table" in str(e) for e in names.values()):
        return (f"{where} has no Bannerfall tables: run `bannerfall migrate` (or `bannerfall serve`) "
                "with this database first")
    for e in names.values():
        if isinstance(e, (ConnectionRefusedError, TimeoutError, asyncio.TimeoutError)) or (
                isinstance(e, OSError) and e.errno in (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH)):
            reason = ("timed out" if isinstance(e, (TimeoutError, asyncio.TimeoutError)) else
                      "connection refused" if isinstance(e, ConnectionRefusedError) or e.errno == errno.ECONNREFUSED
                      else (e.strerror or "cannot connect"))
            return (f"cannot connect to PostgreSQL at {u.host or 'localhost'}:{u.port or 5432} ({reason}); "
                    f"start it or fix BANNERFALL_DATABASE_URL / --database-url ({where})")
        if isinstance(e, socket.gaierror):
            return f"unknown database host {u.host!r} in {where}"
    if "NoSuchModuleError" in names or "ArgumentError" in names:
        return f"not a database URL Bannerfall can use: {where} (sqlite+aiosqlite:///FILE or postgresql://USER@HOST/DB)"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"database {where}: {first}"


def _sqlite_path(url: str) -> Path | None:
    from sqlalchemy.engine import make_url

    u = make_url(url)
    if not u.drivername.startswith("sqlite"):
        return None
    return Path(u.database or "")


def _connect_args(url: str) -> dict[str, Any]:
    return {"timeout": 5} if url.startswith("postgresql") else {}


async def _probe_database(url: str) -> None:
    """Connect once (5 s at most) and run ``SELECT 1``; raises what the driver raises."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url, connect_args=_connect_args(url))
    try:
        async with engine.connect() as conn:
            await asyncio.wait_for(conn.execute(text("SELECT 1")), 10)
    finally:
        await engine.dispose()


async def _probe_redis(url: str) -> None:
    import redis.asyncio as redis

    client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3)
    try:
        await client.ping()
    finally:
        await client.aclose()


def _read_database_url(option: str | None) -> tuple[str, str]:
    """The database a read command uses and where that choice came from; refuses (one line) a
    SQLite file that does not exist, so a read command never creates a database."""
    settings = _settings(database_url=option)
    url = settings.database_url
    source = ("--database-url" if option else
              "BANNERFALL_DATABASE_URL" if os.environ.get("BANNERFALL_DATABASE_URL") else "the default")
    try:
        path = _sqlite_path(url)
    except Exception:  # noqa: BLE001 - any failure becomes one line
        _fail(f"not a database URL: {url!r} (from {source})")
    if path is not None and (not str(path) or str(path) == ":memory:" or not path.is_file()):
        shown = path.resolve() if str(path) else "(none)"
        _fail(f"no database at {shown} (SQLite, from {source}); run this where the server runs, "
              f"or pass --database-url / set BANNERFALL_DATABASE_URL to the server's database", EXIT_FAILED)
    return url, source


async def _find_id(engine, url: str, column: Any, wanted_id: str, what: str) -> str:
    """The id in ``column`` that is ``wanted_id`` or starts with it (at least 8 hex characters, as
    the web pages and the ledger show them; dashes ignored, any case). One line (CliError) when it
    is not an id (exit 2), matches none (exit 1) or more than one (exit 2, with the candidates)."""
    import re

    from sqlalchemy import select

    wanted = wanted_id.strip().lower()
    if not re.fullmatch(r"[0-9a-f-]{8,64}", wanted):
        _fail(f"{wanted_id!r} is not a {what} id (give the whole id or its first 8 or more characters)")
    plain = wanted.replace("-", "")
    async with engine.connect() as conn:
        exact = (await conn.execute(select(column).where(column.in_([wanted, plain])))).scalars().first()
        if exact is not None:
            return exact
        ids = (await conn.execute(select(column).where(column.like(plain + "%")).limit(5))).scalars().all()
    if not ids:
        _fail(f"no {what} {wanted_id} in {shown_url(url)}", EXIT_FAILED)
    if len(ids) > 1:
        candidates = ", ".join(i[:12] + "…" for i in ids)
        _fail(f"{wanted_id} is ambiguous in {shown_url(url)}: {candidates} — give more characters")
    return ids[0]


async def _find_match(repo, url: str, match_id: str) -> dict[str, Any]:
    """The match whose id is ``match_id`` or starts with it (:func:`_find_id`)."""
    from app.db.models import Match

    found = await _find_id(repo.engine, url, Match.id, match_id, "match")
    match = await repo.match(found)
    if match is None:
        _fail(f"no match {match_id} in {shown_url(url)}", EXIT_FAILED)
    return match


async def _load(match_id: str, url: str):
    from sqlalchemy.ext.asyncio import create_async_engine

    from app.db.repo import Repository

    engine = create_async_engine(url, connect_args=_connect_args(url))
    try:
        repo = Repository(engine)
        try:
            match = await _find_match(repo, url, match_id)
            actions = await repo.actions(match["id"])
        except CliError:
            raise
        except Exception as exc:
            if _debug():
                raise
            _fail(database_problem(exc, url), EXIT_FAILED)
        return match, actions
    finally:
        await engine.dispose()


# --- serve / migrate ------------------------------------------------------------------------

def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything says "ready"; one line when the port is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            _fail(f"port {port} on {host} is already in use (another bannerfall serve?): stop it, "
                  f"or pick another with --port / BANNERFALL_PORT", EXIT_FAILED)
        _fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}", EXIT_FAILED)
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _preflight(settings) -> None:
    """Check the database and Redis before starting (one line each when they are not right)."""
    url = settings.database_url
    path = _sqlite_path(url)
    if path is not None:
        if str(path) and str(path) != ":memory:" and not path.resolve().parent.is_dir():
            _fail(f"no directory {path.resolve().parent} for the SQLite database {shown_url(url)}", EXIT_FAILED)
    else:
        try:
            asyncio.run(_probe_database(url))
        except Exception as exc:
            if _debug():
                raise
            _fail(database_problem(exc, url), EXIT_FAILED)
    if settings.redis_url:
        try:
            asyncio.run(asyncio.wait_for(_probe_redis(settings.redis_url), 8))
        except Exception as exc:
            if _debug():
                raise
            reason = _connect_reason(exc) if "refused" in str(exc).lower() or "111" in str(exc) else (
                str(exc).strip().splitlines()[0] if str(exc).strip() else "timed out")
            _fail(f"cannot reach Redis at {shown_url(settings.redis_url)} ({reason}); start it or fix "
                  f"BANNERFALL_REDIS_URL", EXIT_FAILED)


def _claim_database(settings) -> Any:
    """This process's claim on its database (``app.db.node_lock``): a node without Redis alone, nodes
    with Redis together; one line when another node holds a claim this one may not share."""
    from app.db.node_lock import DatabaseInUse, claim_database

    holder = {"pid": os.getpid(), "node": settings.node, "address": f"{settings.host}:{settings.port}"}
    try:
        return claim_database(settings.database_url, shared=bool(settings.redis_url), holder=holder,
                              shown=shown_url(settings.database_url))
    except DatabaseInUse as exc:
        _fail(exc.message, EXIT_FAILED)
    except Exception as exc:
        if _debug():
            raise
        _fail(database_problem(exc, settings.database_url), EXIT_FAILED)


def _migrate(url: str) -> None:
    from app.db.migrate import upgrade

    try:
        upgrade(url)
    except Exception as exc:
        if _debug():
            raise
        _fail(database_problem(exc, url), EXIT_FAILED)


def uvicorn_config(app: Any, settings: Any) -> Any:
    """The ``uvicorn.Config`` ``bannerfall serve`` runs ``app`` (``app.main.create_app``) with: uvicorn's
    httptools protocol, and match sockets on the lean transport (``app/transport/fast.py``) or the
    ASGI one (``app.transport.servers.server_protocols``, ``BANNERFALL_SOCKET_TRANSPORT``). The event
    loop is uvicorn's choice (uvloop when installed). uvicorn's proxy headers are off: the app finds
    the client's address behind the proxies it trusts (``BANNERFALL_TRUSTED_PROXIES``,
    ``app.api.limits.TrustedProxies``), so uvicorn's ``FORWARDED_ALLOW_IPS`` (whose ``*`` takes the
    leftmost, client-written address) is not read."""
    import uvicorn

    from app.transport.servers import server_protocols

    http_protocol, ws_protocol = server_protocols(app, settings)
    return uvicorn.Config(app, host=settings.host, port=settings.port, log_level=settings.log_level,
                          http=http_protocol, ws=ws_protocol, ws_max_size=1 << 20, timeout_keep_alive=75,
                          ws_per_message_deflate=settings.ws_compression, ws_ping_interval=settings.heartbeat_seconds,
                          ws_ping_timeout=settings.heartbeat_seconds * 2, access_log=False,
                          proxy_headers=False)  # the app reads X-Forwarded-For itself: TRUSTED_PROXIES


def _serve(host, port, database_url) -> None:
    import logging

    settings = _settings(host=host, port=port, database_url=database_url)
    from app.api.security import AdminTokenRefused, check_admin_token

    try:
        check_admin_token(settings.admin_token)  # a weak token: one line, before the port, database or log
    except AdminTokenRefused as exc:
        _fail(str(exc).removeprefix("bannerfall: "))
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sock = _bind(settings.host, settings.port)
    _preflight(settings)
    claim = _claim_database(settings)  # held for the process's life, as the port is
    if settings.migrate_on_start:
        _migrate(settings.database_url)
        settings = settings.model_copy(update={"migrate_on_start": False})
    import uvicorn

    from app.main import create_app

    server = uvicorn.Server(uvicorn_config(create_app(settings), settings))
    try:
        server.run(sockets=[sock])
    finally:
        if claim is not None:
            claim.release()
    if not server.started:
        _fail("the server stopped during start-up (see the log above)", EXIT_FAILED)


@cli.command()
def serve(host: str | None = typer.Option(None, help="bind address (default 127.0.0.1)"),
          port: int | None = typer.Option(None, help="port (default 8000)"),
          database_url: str | None = typer.Option(None, help="overrides BANNERFALL_DATABASE_URL"),
          workers_note: bool = typer.Option(False, hidden=True)) -> None:
    """Run a server node: checks its port, database and Redis, applies migrations, then HTTP + WebSocket."""
    _run(_serve, host, port, database_url)


@cli.command()
def migrate(database_url: str | None = typer.Option(None, help="overrides BANNERFALL_DATABASE_URL")) -> None:
    """Apply Alembic migrations up to head."""
    def body() -> None:
        url = _settings(database_url=database_url).database_url
        _migrate(url)
        typer.echo(f"schema at head in {shown_url(url)}")

    _run(body)


# --- replay / verify ------------------------------------------------------------------------

_DB_HELP = "the server's database (default: BANNERFALL_DATABASE_URL, else ./bannerfall.db)"


def _seat_names(match: dict[str, Any]) -> dict[int, str]:
    return {i: (s.get("name") or f"seat {i}") for i, s in enumerate(match.get("seats") or [])}


def _standings(game: str, outcome: dict[str, Any] | None, names: dict[int, str]) -> list[str]:
    """``1st  name  18 provinces`` lines, best first."""
    from app.client.wording import score_text

    if not outcome:
        return []
    ranks = outcome.get("ranks") or {}
    scores = outcome.get("scores") or {}
    width = max((len(n) for n in names.values()), default=8)
    lines = []
    for seat, rank in sorted(ranks.items(), key=lambda kv: (kv[1], int(kv[0]))):
        score = scores.get(seat)
        lines.append(f"  {_ordinal(rank):<4} {names.get(int(seat), f'seat {seat}'):<{width}}  "
                     f"{score_text(game, score) if score is not None else ''}".rstrip())
    return lines


def _ordinal(n: int) -> str:
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _replay(match_id: str, database_url: str | None, events: bool) -> None:
    """Print a match's log as the server replays it: the same :func:`app.runtime.replay.replay`
    (gap check and rule check included) that rebuilds a match after a crash."""
    from app.client.wording import describe, reason_text
    from app.runtime.replay import ReplayMismatch, RulesUnavailable, outcome_of
    from app.runtime.replay import replay as do_replay

    url, _source = _read_database_url(database_url)
    match, actions = asyncio.run(_load(match_id, url))
    names = _seat_names(match)
    try:
        result = do_replay(match, actions, keep_events=len(actions) + 1, audiences=False)
    except RulesUnavailable as exc:
        _missing_rules(match, exc)
    except ReplayMismatch as exc:
        typer.echo(f"FAIL: {match['id']}: log does not replay under {_rules_line(match)}: {exc}")
        raise typer.Exit(EXIT_FAILED) from None
    game = result.game
    typer.echo(f"match {match['id']} ({game.title}, {_rules_line(match)}, {match['status']}) from {shown_url(url)}")
    by_version = {ver: evs for ver, evs, _audiences in result.history}
    for row in actions:
        if row["kind"] == "abort":
            typer.echo(f"v{row['seq']:<5} aborted: {row['action'].get('reason')}")
            continue
        who = names.get(row["seat"], "the server") if row["seat"] is not None else "the server"
        how = " (deadline passed)" if row["kind"] == "deadline" else ""
        typer.echo(f"v{row['seq']:<5} {who}: {str(row['action'].get('type', '?')).replace('_', ' ')}{how}")
        for ev in by_version.get(row["seq"], ()):
            line = describe(game.id, ev.to_wire(), names.__getitem__)
            if line is None or (not events and (line.private or line.kind == "minor")):
                continue
            typer.echo(f"        {line.text}")
    out = outcome_of(result)
    if out is None:
        typer.echo(f"{len(actions)} actions replayed; the match is not over")
        return
    wire = out.to_wire()
    typer.echo(f"{len(actions)} actions replayed; match over: {reason_text(game.id, wire['reason'])}")
    for standing in _standings(game.id, wire, names):
        typer.echo(standing)


@cli.command()
def replay(match_id: str = typer.Argument(..., help="a match id, or its first 8 or more characters"),
           database_url: str | None = typer.Option(None, help=_DB_HELP),
           events: bool = typer.Option(False, help="print every event, hidden cards included (admin view)")) -> None:
    """Re-run a match's log from its seed and print what happened."""
    _run(_replay, match_id, database_url, events)


def _rules_line(match: dict[str, Any]) -> str:
    """``conquest rules version 1`` (the version the match was played under, and the engine that
    plays it here: the installed one, or an earlier one the game keeps)."""
    from app.games import versions

    needed = versions.match_rules_version(match)
    current = versions.current_version(match["game"])
    kept = "" if needed == current else f", kept beside the installed version {current}"
    return f"{match['game']} rules version {needed}{kept}"


def _missing_rules(match: dict[str, Any], exc: Exception) -> NoReturn:
    _fail(f"{match['id']}: cannot replay: {exc}. Replay it with a Bannerfall release that has that version, "
          f"or keep that engine (docs/operations.md, 'Deploying a rules change')", EXIT_FAILED)


def _verify(match_id: str, database_url: str | None) -> None:
    from app.games.base import seed_commitment
    from app.runtime.replay import ReplayMismatch, RulesUnavailable, deadline_disagreements
    from app.runtime.replay import replay as do_replay

    url, _source = _read_database_url(database_url)
    match, actions = asyncio.run(_load(match_id, url))
    problems = []
    if seed_commitment(bytes.fromhex(match["seed"])) != match["seed_hash"]:
        problems.append("seed does not match seed_hash")
    try:
        result = do_replay(match, actions, audiences=False)
    except RulesUnavailable as exc:
        for p in problems:
            typer.echo(f"FAIL: {match['id']}: {p}")
        _missing_rules(match, exc)
    except ReplayMismatch as exc:
        problems.append(f"log does not replay under {_rules_line(match)}: {exc}")
        result = None
    if result is not None:
        # the log's deadlines are those the step derives (the rebuild derives them, never reads them)
        disagreements = deadline_disagreements(match, actions)
        problems.extend(f"deadlines not those the rules derive: {d}" for d in disagreements[:3])
        outcome = result.game.outcome(result.state)
        recorded = match["outcome"]
        if match["status"] == "finished":
            if outcome is None or outcome.to_wire() != recorded:
                replayed = outcome.to_wire() if outcome else None
                problems.append(f"recorded outcome {recorded} but replay gives {replayed}")
        elif match["status"] == "running" and outcome is not None:
            problems.append("replay says the match is over but it is recorded as running")
    if problems:
        for p in problems:
            typer.echo(f"FAIL: {match['id']}: {p}")
        raise typer.Exit(EXIT_FAILED)
    typer.echo(f"OK: {match['id']} ({_rules_line(match)}, {match['status']}, {len(actions)} actions) "
               "reproduces its record")


@cli.command()
def verify(match_id: str = typer.Argument(..., help="a match id, or its first 8 or more characters"),
           database_url: str | None = typer.Option(None, help=_DB_HELP)) -> None:
    """Check a match: its seed matches the public hash and its log reproduces the recorded result."""
    _run(_verify, match_id, database_url)


# --- demo -----------------------------------------------------------------------------------

def normalise_url(raw: str) -> str:
    """A server's base URL: ``http://`` added when no scheme is given, trailing slashes dropped;
    anything but http(s) with a host is refused (CliError)."""
    import httpx

    text = raw.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        url = httpx.URL(text)
    except Exception:  # noqa: BLE001 - any failure becomes one line
        _fail(f"--url {raw!r} is not a URL (e.g. http://127.0.0.1:8000)")
    if url.scheme not in ("http", "https") or not url.host:
        _fail(f"--url {raw!r} is not an http(s) URL with a host (e.g. http://127.0.0.1:8000)")
    return text.rstrip("/")


def _wait_healthy(url: str, proc: subprocess.Popen | None, timeout: float, log_path: Path | None = None) -> None:
    """Wait until ``url``/healthz answers 200; one line naming the URL when it does not in ``timeout`` s."""
    import httpx

    deadline = time.monotonic() + timeout
    reason = "no answer"
    while True:
        if proc is not None and proc.poll() is not None:
            last = ""
            if log_path is not None and log_path.exists():
                lines = [line for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
                last = f": {lines[-1].strip()}" if lines else ""
            _fail(f"the demo's own server exited with {proc.returncode} before it was ready{last}", EXIT_FAILED)
        try:
            resp = httpx.get(url + "/healthz", timeout=min(2.0, max(0.2, deadline - time.monotonic())))
            if resp.status_code == 200:
                return
            reason = f"/healthz answered {resp.status_code}: is this a Bannerfall server?"
        except httpx.ConnectError as exc:
            reason = _connect_reason(exc)
            if proc is None and reason in ("connection refused", "unknown host"):
                deadline = time.monotonic()  # nothing listens there: no point waiting
        except httpx.TimeoutException:
            reason = "timed out"
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
        if time.monotonic() >= deadline:
            _fail(f"cannot reach a Bannerfall server at {url} ({reason}); start one with `bannerfall serve`, "
                  f"or leave out --url to let the demo start its own", EXIT_FAILED)
        time.sleep(0.25)


def _connect_reason(exc: BaseException) -> str:
    for e in _causes(exc):
        if isinstance(e, socket.gaierror):
            return "unknown host"
        if isinstance(e, ConnectionRefusedError) or (isinstance(e, OSError) and e.errno == errno.ECONNREFUSED):
            return "connection refused"
    text = str(exc).strip()
    return "connection refused" if "refused" in text.lower() else (text.splitlines()[0] if text else "cannot connect")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def choose(given: str, choices: dict[str, str], what: str, among: str = "") -> str:
    """The choice ``given`` names: a key of ``choices`` (``{name: canonical id}``: ids and titles),
    compared without case or surrounding spaces. A name that is none of them is refused in one line
    (CliError, exit 2) with the closest ones ("did you mean") and the whole list, as a mistyped
    command is."""
    import difflib

    folded = {name.casefold(): value for name, value in choices.items()}
    key = given.strip().casefold()
    if key in folded:
        return folded[key]
    ids = sorted(set(choices.values()))
    close = difflib.get_close_matches(key, list(folded), n=3, cutoff=0.6)
    guesses = list(dict.fromkeys(folded[c] for c in close))
    hint = f"did you mean {' or '.join(repr(g) for g in guesses)}? " if guesses else ""
    _fail(f"unknown {what} {given!r}{among}; {hint}{what}s: {', '.join(ids)}")


def _check_demo_args(game: str, players: int, bot: str, options: str) -> tuple[str, int, str, dict[str, Any]]:
    """Everything checkable before anything is created on a server; returns the game's id, the
    seat count (``players``, or 0 for 3 within the game's seats), the bot kind and the options. A
    game is named by its id or its title in any case (``Provinces``, ``hold'em conquest``), a bot
    kind in any case."""
    from pydantic import ValidationError

    from app.games import registry
    from app.runtime.bots import bot_kinds

    games = registry()
    names = {gid: gid for gid in games} | {g.title: gid for gid, g in games.items()}
    game = choose(game, names, "game")
    engine = games[game]
    kinds = bot_kinds(game)
    if bot == "smart" and "smart" not in kinds:  # the default: the game's first bot kind
        bot = kinds[0]
    bot = choose(bot, {k: k for k in kinds}, "bot kind", f" for {game}")
    if players == 0:  # the default: 3 within the game's seats
        players = min(max(3, engine.min_seats), engine.max_seats)
    if not engine.min_seats <= players <= engine.max_seats:
        _fail(f"{game} is for {engine.min_seats} to {engine.max_seats} players, not {players}")
    try:
        parsed = json.loads(options)
    except json.JSONDecodeError as exc:
        _fail(f"--options is not JSON: {exc.msg} at character {exc.pos}")
    if not isinstance(parsed, dict):
        _fail('--options must be a JSON object, e.g. \'{"max_rounds": 5}\'')
    try:
        engine.Options.model_validate(parsed)
    except ValidationError as exc:
        err = exc.errors()[0]
        _fail(f"--options: {'.'.join(str(x) for x in err.get('loc', ())) or 'options'}: {err.get('msg')}")
    return game, players, bot, parsed


def _demo_cmd(game: str, players: int, url: str | None, bot: str, options: str, quiet: bool) -> None:
    game, players, bot, opts = _check_demo_args(game, players, bot, options)
    proc = None
    tmp = None
    log_file = None
    admin_token = None
    try:
        if url is None:
            admin_token = secrets.token_urlsafe(24)  # conquest: the demo grants its host specials
            port = _free_port()
            tmp = tempfile.TemporaryDirectory(prefix="bannerfall-demo-")
            log_path = Path(tmp.name) / "server.log"
            env = {**os.environ, "BANNERFALL_PORT": str(port), "BANNERFALL_HOST": "127.0.0.1",
                   "BANNERFALL_DATABASE_URL": f"sqlite+aiosqlite:///{Path(tmp.name) / 'demo.db'}",
                   "BANNERFALL_LOG_LEVEL": "warning", "BANNERFALL_REDIS_URL": "", "BANNERFALL_ADMIN_TOKEN": admin_token}
            env.pop("BANNERFALL_REDIS_URL")
            log_file = open(log_path, "wb")  # noqa: SIM115 - the server writes to it until stopped
            # a session of its own: Ctrl-C reaches the demo only, which then stops the server quietly
            proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve"], env=env, stdout=log_file,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            url = f"http://127.0.0.1:{port}"
            _wait_healthy(url, proc, 60.0, log_path)
        else:
            url = normalise_url(url)
            _wait_healthy(url, None, 3.0)
        code = asyncio.run(_demo(url, game, players, bot, opts, quiet, admin_token))
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if log_file is not None:
            log_file.close()
        if tmp is not None:
            tmp.cleanup()
    if code:
        raise typer.Exit(code)


@cli.command()
def demo(game: str = typer.Option("provinces", help="a game's id or title (`bannerfall games` lists them)"),
         players: int = typer.Option(0, help="seats, all played by bots (default: 3, within the game's seats)"),
         url: str | None = typer.Option(None, help="a running server, e.g. http://127.0.0.1:8000; default: start one"),
         bot: str = typer.Option("smart", help="kind of bot in every seat (the game's kinds: `bannerfall games`; "
                                               "a game without 'smart' uses its first kind)"),
         options: str = typer.Option("{}", help="lobby options as JSON"),
         quiet: bool = typer.Option(False, help="print only the standings")) -> None:
    """Start a server (unless --url), fill a lobby with bots, play a whole match over real
    WebSockets showing progress, and print the standings."""
    _run(_demo_cmd, game, players, url, bot, options, quiet)


async def _demo_specials(rest, url: str, admin_token: str | None) -> list[str] | None:
    """Conquest demo on its own server: an admin grants the host the specials the engine's bot would
    bring, for 2 matches, so the host's seat brings them too (conquest.md 5)."""
    if admin_token is None:
        return None
    from app.client import RestClient
    from app.meta.loadouts import bot_loadout

    loadout = bot_loadout(0)
    me = await rest.me()
    async with RestClient(url, admin_token) as admin:
        for special in loadout:
            await admin.admin_grant_special(me["id"], special, 2, "demo")
    return loadout


async def _specials_left(rest, loadout: list[str]) -> dict[str, int]:
    """The host's matches left per special once the finished match is counted (it is counted as the
    match ends, in the background: wait a little for it)."""
    left: dict[str, int] = {}
    for _ in range(50):
        left = {s["id"]: s["matches_left"] for s in (await rest.inventory())["specials"]}
        if all(left.get(s, 0) < 2 for s in loadout):
            break
        await asyncio.sleep(0.1)
    return left


async def _demo(url: str, game: str, seats: int, bot_kind: str, options: dict, quiet: bool,
                admin_token: str | None = None) -> int:
    """Play one bot match on ``url``; the lobby is closed again if anything fails before it starts."""
    import httpx
    import websockets
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from app.client import ApiError, MatchSocket, RestClient
    from app.client.socket import play
    from app.client.wording import describe, reason_text
    from app.games import registry
    from app.runtime.bots import make_bot

    console = Console(highlight=False, soft_wrap=True)
    title = registry()[game].title
    lobby_id: str | None = None
    started_match = False
    async with RestClient(url, timeout=15.0) as rest:
        try:
            # the host's own seat is played by this client's bot too
            await rest.register(f"{bot_kind} demo host")  # "-bot-" names are reserved for server bots
            loadout = await _demo_specials(rest, url, admin_token) if game == "conquest" else None
            lobby = await rest.create_lobby(game, seats, options, loadout=loadout)
            lobby_id = lobby["id"]
            await rest.fill_bots(lobby_id, bot_kind)
            lobby = await rest.start(lobby_id)
            started_match = True
            match_id = lobby["match_id"]
            match = await rest.match(match_id)
            names = {s["seat"]: s["name"] or f"seat {s['seat']}" for s in match["seats"]}
            console.print(f"{title}: {seats} {bot_kind} bots ({', '.join(names[i] for i in sorted(names))}) on {url}")
            console.print(f"match {match_id[:8]} started; seed sha256 {match['seed_hash'][:16]}…")
            loadouts = match["options"].get("loadouts") or []
            for seat, brought in enumerate(loadouts if game == "conquest" else []):
                console.print(f"  {names.get(seat, seat)} brings {', '.join(brought) or 'no specials'}", markup=False)
            sock = MatchSocket(url, match_id, rest.token)
            await sock.connect()
            brain = make_bot(game, bot_kind, 1)
            started = time.monotonic()
            with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                          transient=True, disable=quiet or not console.is_terminal) as progress:
                task = progress.add_task("starting", total=None)

                def show(msg: dict) -> None:
                    if msg.get("type") != "state":
                        return
                    view = msg.get("view") or {}
                    phase = str(view.get("phase", "")).replace("_", " ")
                    progress.update(task, description=f"v{msg['version']} · round {view.get('round', '?')} · {phase}")
                    if quiet:
                        return
                    for ev in msg.get("events", []):
                        line = describe(game, ev, lambda s: names.get(s, f"seat {s}"))
                        if line is None or line.private or line.kind == "minor":
                            continue
                        console.print(f"  v{msg['version']:<5} {line.text}", markup=False)

                ended = await play(sock, brain.decide, on_message=show)
            await sock.close()
        except ApiError as exc:
            await _close_lobby(rest, lobby_id, started_match)
            _fail(f"{url} refused: {exc.message} ({exc.code})", EXIT_FAILED)
        except (httpx.HTTPError, OSError, websockets.exceptions.WebSocketException) as exc:
            await _close_lobby(rest, lobby_id, started_match)
            detail = str(exc).splitlines()[0] if str(exc) else ""
            _fail(f"lost the connection to {url} ({type(exc).__name__}: {detail})".replace(": )", ")"), EXIT_FAILED)
        except BaseException:
            await _close_lobby(rest, lobby_id, started_match)
            raise
    outcome = ended.get("outcome") or {}
    elapsed = time.monotonic() - started
    # the version is the host's audience's (a change it may see), not the match's action count,
    # which `bannerfall verify` gives (docs/protocol.md "Deltas, audiences and versions")
    console.print(f"match over in {elapsed:.1f} s (the host's view at version {ended['version']}): "
                  f"{reason_text(game, outcome.get('reason'))}", markup=False)
    console.print(f"seed revealed: {ended.get('seed')}", markup=False)
    if loadout:
        async with RestClient(url, rest.token, timeout=15.0) as again:
            left = await _specials_left(again, loadout)
        console.print("host's specials after the match: "
                      + ", ".join(f"{s} {left.get(s, 0)} match(es) left" for s in loadout), markup=False)
    console.print("standings:")
    for line in _standings(game, outcome, names):
        console.print(line, markup=False)
    return 0 if outcome.get("ranks") else EXIT_FAILED


async def _close_lobby(rest, lobby_id: str | None, started: bool) -> None:
    """Undo what the demo made before its match started (the host leaving closes the lobby)."""
    if lobby_id is None or started:
        return
    try:
        await asyncio.wait_for(rest.leave(lobby_id), 5)
    except Exception:  # noqa: BLE001, S110 - best-effort cleanup
        pass


# --- verify-spin ------------------------------------------------------------------------------

async def _load_spin(spin_id: str, url: str) -> dict[str, Any] | None:
    from sqlalchemy.ext.asyncio import create_async_engine

    from app.db.tables import spins_t
    from app.db.wallet import WalletRepository

    engine = create_async_engine(url, connect_args=_connect_args(url))
    try:
        try:
            found = await _find_id(engine, url, spins_t.c.id, spin_id, "spin")
            return await WalletRepository(engine).spin(found)
        except CliError:
            raise
        except Exception as exc:
            if _debug():
                raise
            _fail(database_problem(exc, url), EXIT_FAILED)
    finally:
        await engine.dispose()


def _verify_spin(spin_id: str, database_url: str | None) -> None:
    from app.meta.slot import verify_spin

    url, _source = _read_database_url(database_url)
    spin = asyncio.run(_load_spin(spin_id, url))
    if spin is None:
        _fail(f"no spin {spin_id} in {shown_url(url)}", EXIT_FAILED)
    problems = verify_spin(spin)
    prize = spin["prize"]
    won = f"{prize['special']} for {prize['matches']} matches" if prize else "nothing"
    typer.echo(f"spin {spin['id']}: reels {' | '.join(spin['reels'])}; prize: {won}")
    if problems:
        for p in problems:
            typer.echo(f"FAIL: {spin['id']}: {p}")
        raise typer.Exit(EXIT_FAILED)
    typer.echo(f"ok: sha256(seed) = {spin['seed_hash']}; reels and prize reproduced")


def _games() -> None:
    import logging

    from app.games import registry, registry_problems

    logging.getLogger("bannerfall.games").setLevel(logging.CRITICAL)  # said below, once each
    for game_id, game in registry().items():
        info = game.info
        flags = [name for name, on in (("hidden information", info.hidden_information),
                                       ("simultaneous moves", info.simultaneous_moves)) if on]
        flags += [f"chance: {', '.join(sorted(info.chance))}"] if info.chance else []
        if info.compiled:
            from app._native import compiled_report

            running = compiled_report(info.compiled)
            flags.append(f"compiled: {sum(running.values())} of {len(running)} modules")
        where = type(game).__module__.rsplit(".", 1)[0]
        seats = f"{info.min_seats}" if info.min_seats == info.max_seats else f"{info.min_seats}-{info.max_seats}"
        typer.echo(f"{game_id:<12} {info.title} — {seats} seats; bots: "
                   f"{', '.join(info.bots)}; {'; '.join(flags) or 'perfect information'} ({where})")
    for problem in registry_problems():
        typer.echo(f"not registered: {problem}", err=True)
    if registry_problems():
        raise typer.Exit(EXIT_FAILED)


@cli.command()
def games() -> None:
    """The installed games (the bannerfall.games entry points): id, title, seats, bot kinds, flags,
    how many of the modules it declares compiled run compiled, the package; exit 1 when an entry
    point could not be registered (each one said on stderr)."""
    _run(_games)


def _new_game(name: str, into: str | None, title: str | None) -> None:
    from app.kit import KitError, new_game

    target = Path(into) if into is not None else Path(name)
    try:
        written = new_game(name, target, title)
    except KitError as exc:
        _fail(str(exc))
    typer.echo(f"made {name} in {target}/ ({len(written)} files). Next:")
    typer.echo(f"  pip install -e {target}    (registers the game: its bannerfall.games entry point)")
    typer.echo(f"  pytest {target}/tests    (Bannerfall's suites over it, and its rule tests)")
    typer.echo(f"  bannerfall demo --game {name}    (a whole bot match over real sockets)")
    typer.echo("The guide: docs/games/README.md (Bannerfall's repository).")


@cli.command("new-game")
def new_game_command(name: str = typer.Argument(..., help="the game's id: a lowercase letter, then letters, "
                                                          "digits or _ (32 at most)"),
                     into: str | None = typer.Option(None, help="the folder to make (default: ./NAME)"),
                     title: str | None = typer.Option(None, help="the game's title (default: from the id)")) -> None:
    """Make a complete, installable game package from the template: engine, view, bots, wire types, a
    web board, event wording, its doc, its JSON Schemas and tests running Bannerfall's suites."""
    _run(_new_game, name, into, title)


@cli.command("verify-spin")
def verify_spin_command(spin_id: str = typer.Argument(..., help="a spin id, or its first 8 or more characters "
                                                                "(as the ledger shows it)"),
                        database_url: str | None = typer.Option(None, help=_DB_HELP)) -> None:
    """Check a slot machine spin: its seed against the hash published before it, and its reels and
    prize recomputed from the seed, the client seed, the reel strip and the paytable it was played with."""
    _run(_verify_spin, spin_id, database_url)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
