"""Issue 13 item 4: no token and no token hash in the logs at any level. A server at ``debug`` runs
a whole bot match (its bots are in-process clients with tokens of their own) with a player, a
spectator and an admin connected; then the whole log is searched for every token and token hash
the test can know (its own tokens, and every hash in the players table, bots' included)."""
from __future__ import annotations

import hashlib
import logging

import httpx
from sqlalchemy import select

from app.client import MatchSocket, RestClient
from app.client.socket import play
from app.db.database import make_engine
from app.db.models import Player
from app.logsetup import install_log_safety, redact
from app.runtime.bots import make_bot
from tests.conftest import ServerProcess
from tests.e2e.helpers import connect


def test_redact_scrubs_token_shapes():
    token = "tok_" + "x" * 40
    digest = hashlib.sha256(token.encode()).hexdigest()
    for text in (f'< TEXT \'{{"type":"hello","token":"{token}"}}\'', f"{{'token': '{token}'}}", f"token={token}",
                 f"Authorization: Bearer {token}", f"WHERE token_hash = ? ('{digest}',)", f"[{digest}]",
                 f'{{"type":"hello","token":"{token[:20]}...'):
        out = redact(text)
        assert token[:12] not in out and digest not in out, out
    assert redact("match 9f3a started") == "match 9f3a started"


def test_records_are_scrubbed_as_they_are_made(caplog):
    install_log_safety()
    token = "Zq9" * 12
    with caplog.at_level(logging.DEBUG, logger="tests.logsafety"):
        logging.getLogger("tests.logsafety").debug("hello %s", {"type": "hello", "token": token})
        try:
            raise ValueError(f"bad token: {token}")
        except ValueError:
            logging.getLogger("tests.logsafety").exception("failed")
    assert token not in caplog.text
    assert logging.getLogger("sqlalchemy.engine").getEffectiveLevel() >= logging.WARNING


async def test_a_whole_bot_match_at_debug_logs_no_token_or_token_hash(tmp_path):
    db = f"sqlite+aiosqlite:///{tmp_path / 'logs.db'}"
    srv = ServerProcess(db, env={"BANNERFALL_LOG_LEVEL": "debug"}).start()
    tokens: list[str] = [srv.admin_token]
    try:
        async with RestClient(srv.url) as host, RestClient(srv.url) as watcher, \
                RestClient(srv.url, srv.admin_token) as admin:
            tokens.append((await host.register("host"))["token"])
            tokens.append((await watcher.register("watcher"))["token"])
            lobby = await host.create_lobby("provinces", 3, {"max_rounds": 2})
            await host.fill_bots(lobby["id"], "smart")
            match_id = (await host.start(lobby["id"]))["match_id"]
            spectator, _ = await connect(srv.url, match_id, watcher.token)
            admin_sock, first = await connect(srv.url, match_id, srv.admin_token, as_="admin")
            assert first["viewer"] == "admin"
            await admin.admin_match(match_id)
            bad = httpx.get(srv.url + "/api/v1/players/me", headers={"Authorization": "Bearer not-a-token-" + "q" * 30})
            assert bad.status_code == 401
            tokens.append("not-a-token-" + "q" * 30)
            sock = MatchSocket(srv.url, match_id, host.token)
            await sock.connect()
            ended = await play(sock, make_bot("provinces", "smart", 1).decide, idle_timeout=120)
            assert ended["type"] == "ended"
            await sock.close()
            await spectator.close()
            await admin_sock.close()
    finally:
        srv.stop()
    engine = make_engine(db)
    try:
        async with engine.connect() as conn:
            hashes = list((await conn.execute(select(Player.__table__.c.token_hash))).scalars())
    finally:
        await engine.dispose()
    log = srv.logs()
    assert "DEBUG" in log and len(hashes) >= 5          # the server did log at debug, bots included
    for token in tokens:
        assert token not in log and token[:16] not in log, "a token is in the log"
        hashes.append(hashlib.sha256(token.encode()).hexdigest())
    for digest in hashes:
        assert digest not in log and digest[:16] not in log, "a token hash is in the log"
