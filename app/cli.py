"""``bannerfall serve | demo | migrate | replay | verify`` (Typer)."""
from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import typer

cli = typer.Typer(add_completion=False, no_args_is_help=True, help="Bannerfall game server")


def _settings(**overrides):
    from app.config import Settings

    return Settings(**{k: v for k, v in overrides.items() if v is not None})


@cli.command()
def serve(host: Optional[str] = typer.Option(None, help="bind address (default 127.0.0.1)"),
          port: Optional[int] = typer.Option(None, help="port (default 8000)"),
          database_url: Optional[str] = typer.Option(None, help="overrides BANNERFALL_DATABASE_URL"),
          workers_note: bool = typer.Option(False, hidden=True)) -> None:
    """Run a server node: migrations applied at start, then HTTP + WebSocket."""
    import logging

    import uvicorn

    from app.main import create_app

    settings = _settings(host=host, port=port, database_url=database_url)
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_app(settings)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level,
                ws="websockets-sansio", ws_max_size=1 << 20, timeout_keep_alive=75,
                ws_per_message_deflate=settings.ws_compression, ws_ping_interval=settings.heartbeat_seconds,
                ws_ping_timeout=settings.heartbeat_seconds * 2, access_log=False)


@cli.command()
def migrate(database_url: Optional[str] = typer.Option(None)) -> None:
    """Apply Alembic migrations up to head."""
    from app.db.migrate import upgrade

    upgrade(_settings(database_url=database_url).database_url)
    typer.echo("schema at head")


async def _load(match_id: str, database_url: str | None):
    from app.db.database import make_engine
    from app.db.repo import Repository

    engine = make_engine(_settings(database_url=database_url).database_url)
    try:
        repo = Repository(engine)
        match = await repo.match(match_id)
        actions = await repo.actions(match_id) if match else []
        return match, actions
    finally:
        await engine.dispose()


@cli.command()
def replay(match_id: str, database_url: Optional[str] = typer.Option(None),
           events: bool = typer.Option(False, help="print every event (admin view: includes hidden cards)")) -> None:
    """Re-run a match's log from its seed and print what happened."""
    from app.games import registry
    from app.games.base import ADMIN
    from app.runtime.replay import initial_state

    match, actions = asyncio.run(_load(match_id, database_url))
    if match is None:
        typer.echo(f"no match {match_id}", err=True)
        raise typer.Exit(2)
    game = registry()[match["game"]]
    state = initial_state(game, match)
    for row in actions:
        if row["kind"] == "abort":
            typer.echo(f"v{row['seq']}: aborted ({row['action'].get('reason')})")
            continue
        state, evs = game.apply(state, row["seat"], row["action"])
        line = f"v{row['seq']}: seat {row['seat']} {row['kind']} {row['action'].get('type')}"
        if events:
            line += " " + json.dumps([e.to_wire() for e in evs])
        typer.echo(line)
    out = game.outcome(state)
    typer.echo(f"{len(actions)} actions replayed; outcome: {out.to_wire() if out else 'not over'}")


@cli.command()
def verify(match_id: str, database_url: Optional[str] = typer.Option(None)) -> None:
    """Check a match: its seed matches the public hash and its log reproduces the recorded result."""
    from app.games.base import seed_commitment
    from app.runtime.replay import ReplayMismatch, replay as do_replay

    match, actions = asyncio.run(_load(match_id, database_url))
    if match is None:
        typer.echo(f"no match {match_id}", err=True)
        raise typer.Exit(2)
    problems = []
    if seed_commitment(bytes.fromhex(match["seed"])) != match["seed_hash"]:
        problems.append("seed does not match seed_hash")
    try:
        result = do_replay(match, actions)
    except ReplayMismatch as exc:
        problems.append(f"log does not replay: {exc}")
        result = None
    if result is not None:
        outcome = result.game.outcome(result.state)
        recorded = match["outcome"]
        if match["status"] == "finished":
            if outcome is None or outcome.to_wire() != recorded:
                problems.append(f"recorded outcome {recorded} but replay gives {outcome.to_wire() if outcome else None}")
        elif match["status"] == "running" and outcome is not None:
            problems.append("replay says the match is over but it is recorded as running")
    if problems:
        for p in problems:
            typer.echo(f"FAIL: {p}")
        raise typer.Exit(1)
    typer.echo(f"OK: {match_id} ({match['game']}, {match['status']}, {len(actions)} actions) reproduces its record")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen | None, timeout: float = 60.0) -> None:
    import httpx

    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(url + "/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("server did not become healthy")


@cli.command()
def demo(game: str = typer.Option("provinces", help="provinces | conquest | warrior"),
         players: int = typer.Option(3, min=2, max=6, help="seats, all played by bots (provinces 2-6, others 2-4)"),
         url: Optional[str] = typer.Option(None, help="a running server; default: start one"),
         bot: str = typer.Option("smart", help="kind of the server's bots: random | smart"),
         options: str = typer.Option("{}", help="lobby options as JSON"),
         quiet: bool = typer.Option(False, help="print only the standings")) -> None:
    """Start a server (unless --url), fill a lobby with bots, play a whole match over real
    WebSockets showing progress, and print the standings."""
    proc = None
    tmp = None
    admin_token = None
    if url is None:
        port = _free_port()
        tmp = tempfile.TemporaryDirectory(prefix="bannerfall-demo-")
        admin_token = secrets.token_urlsafe(24)  # the demo's host gets specials to bring (conquest)
        env = {**os.environ, "BANNERFALL_PORT": str(port),
               "BANNERFALL_DATABASE_URL": f"sqlite+aiosqlite:///{Path(tmp.name) / 'demo.db'}",
               "BANNERFALL_LOG_LEVEL": "warning", "BANNERFALL_ADMIN_TOKEN": admin_token}
        proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve"], env=env)
        url = f"http://127.0.0.1:{port}"
    from app.client import ApiError

    try:
        _wait_healthy(url, proc)
        code = asyncio.run(_demo(url, game, players, bot, json.loads(options), quiet, admin_token))
    except ApiError as exc:
        typer.echo(f"error: {exc.code}: {exc.message}", err=True)
        code = 2
    except json.JSONDecodeError as exc:
        typer.echo(f"error: --options is not JSON: {exc}", err=True)
        code = 2
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        if tmp is not None:
            tmp.cleanup()
    raise typer.Exit(code)


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


def _show_loadouts(match: dict) -> None:
    loadouts = match["options"].get("loadouts") or []
    for seat in match["seats"]:
        brought = loadouts[seat["seat"]] if seat["seat"] < len(loadouts) else []
        typer.echo(f"  seat {seat['seat']} {seat['name']:<16} brings {', '.join(brought) or 'no specials'}")


async def _demo(url: str, game: str, seats: int, bot_kind: str, options: dict, quiet: bool,
                admin_token: str | None = None) -> int:
    from app.client import MatchSocket, RestClient
    from app.client.progress import describe_events
    from app.runtime.bots import make_bot

    async with RestClient(url) as rest:
        await rest.register("demo-host")
        loadout = await _demo_specials(rest, url, admin_token) if game == "conquest" else None
        lobby = await rest.create_lobby(game, seats, options, loadout=loadout)
        typer.echo(f"lobby {lobby['id']} for {game} with {seats} seats on {url}")
        await rest.fill_bots(lobby["id"], bot_kind)
        # the host's own seat (0) is played by a local bot over this process's socket
        lobby = await rest.start(lobby["id"])
        match_id = lobby["match_id"]
        match = await rest.match(match_id)
        names = {s["seat"]: s["name"] for s in match["seats"]}
        typer.echo(f"match {match_id} started; seed sha256 {match['seed_hash'][:16]}…")
        if game == "conquest":
            _show_loadouts(match)
        sock = MatchSocket(url, match_id, rest.token)
        await sock.connect()
        brain = make_bot(game, bot_kind, 1)
        started = time.time()

        def show(msg: dict) -> None:
            if quiet or msg.get("type") != "state":
                return
            for line in describe_events(game, msg.get("events", []), names):
                typer.echo(f"  v{msg['version']:<5} {line}")

        from app.client.socket import play

        ended = await play(sock, brain.decide, on_message=show)
        await sock.close()
        outcome = ended.get("outcome") or {}
        typer.echo(f"match over after {ended['version']} actions in {time.time() - started:.1f}s: "
                   f"{outcome.get('reason')}")
        typer.echo(f"seed revealed: {ended.get('seed')}")
        if loadout:
            for _ in range(50):  # the match's specials are counted as it ends, in the background
                inv = await rest.inventory()
                left = {s["id"]: s["matches_left"] for s in inv["specials"]}
                if all(left.get(s, 0) < 2 for s in loadout):
                    break
                await asyncio.sleep(0.1)
            typer.echo("host's specials after the match: "
                       + ", ".join(f"{s} {left.get(s, 0)} match(es) left" for s in loadout))
        ranks = outcome.get("ranks", {})
        scores = outcome.get("scores", {})
        typer.echo("standings:")
        for seat, rank in sorted(ranks.items(), key=lambda kv: (kv[1], int(kv[0]))):
            typer.echo(f"  {rank}. seat {seat} {names.get(int(seat), '?'):<16} score {scores.get(seat)}")
        return 0 if ranks else 1


async def _load_spin(spin_id: str, database_url: str | None):
    from app.db.database import make_engine
    from app.db.wallet import WalletRepository

    engine = make_engine(_settings(database_url=database_url).database_url)
    try:
        return await WalletRepository(engine).spin(spin_id)
    finally:
        await engine.dispose()


@cli.command("verify-spin")
def verify_spin_command(spin_id: str, database_url: Optional[str] = typer.Option(None)) -> None:
    """Check a slot machine spin: its seed against the hash published before it, and its reels and
    prize recomputed from the seed, the client seed, the reel strip and the paytable it was played with."""
    from app.meta.slot import verify_spin

    spin = asyncio.run(_load_spin(spin_id, database_url))
    if spin is None:
        typer.echo(f"no spin {spin_id}", err=True)
        raise typer.Exit(2)
    problems = verify_spin(spin)
    prize = spin["prize"]
    won = f"{prize['special']} for {prize['matches']} matches" if prize else "nothing"
    typer.echo(f"spin {spin_id}: reels {' | '.join(spin['reels'])}; prize: {won}")
    if problems:
        for p in problems:
            typer.echo(f"MISMATCH: {p}", err=True)
        raise typer.Exit(1)
    typer.echo(f"ok: sha256(seed) = {spin['seed_hash']}; reels and prize reproduced")


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
