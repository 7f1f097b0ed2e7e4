"""The fencing token in the database (issue 9 item 2): ``Repository.commit_batch`` and
``take_match`` on the real Postgres (a uniquely named database) and on SQLite."""
from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from sqlalchemy import insert, select, text, update

from app.db.database import make_engine
from app.db.migrate import upgrade_async
from app.db.repo import MatchWrite, Repository
from app.db.tables import actions_t, matches_t
from tests.conftest import make_db_url


@pytest.fixture(params=["postgres", "sqlite"])
async def repo(request, tmp_path):
    url, pg = await asyncio.to_thread(make_db_url, request.param, tmp_path)
    try:
        await upgrade_async(url)
        engine = make_engine(url)
        repo = Repository(engine)
        repo.kind = request.param  # type: ignore[attr-defined]
        yield repo
        await repo.aclose()
        await engine.dispose()
    finally:
        if pg:
            await asyncio.to_thread(pg.drop)


async def new_match(repo: Repository, epoch: int = 1) -> str:
    match_id = uuid.uuid4().hex
    async with repo.engine.begin() as conn:
        await conn.execute(insert(matches_t), {
            "id": match_id, "game": "provinces", "options": {}, "seat_count": 2, "seats": [],
            "seed": "00" * 32, "seed_hash": "h", "status": "running", "lobby_id": None, "deadlines": {},
            "outcome": None, "version": 0, "created_at": time.time(), "ended_at": None,
            "owner_epoch": epoch, "owner_node": "a"})
    return match_id


def rows(match_id: str, first: int, count: int, tag: str = "x") -> list[dict]:
    return [{"match_id": match_id, "seq": seq, "seat": 0, "kind": "act", "action": {"type": tag},
             "client_seq": seq, "deadlines": {}, "created_at": time.time()}
            for seq in range(first, first + count)]


async def log_of(repo: Repository, match_id: str) -> list[tuple[int, str]]:
    return [(r["seq"], r["action"]["type"]) for r in await repo.actions(match_id)]


async def version_of(repo: Repository, match_id: str) -> int:
    async with repo.engine.connect() as conn:
        return (await conn.execute(select(matches_t.c.version).where(matches_t.c.id == match_id))).scalar_one()


async def test_take_match_raises_the_epoch_and_names_the_node(repo):
    match_id = await new_match(repo)
    assert await repo.take_match(match_id, "b") == 2
    assert (await repo.match(match_id))["owner_node"] == "b"
    assert await repo.take_match("nope", "b") is None
    async with repo.engine.begin() as conn:
        await conn.execute(update(matches_t).where(matches_t.c.id == match_id).values(status="finished"))
    assert await repo.take_match(match_id, "c") is None  # only running matches are taken


async def test_a_stale_owner_is_refused_and_writes_nothing(repo):
    match_id = await new_match(repo)
    assert await repo.commit_batch([MatchWrite(match_id, 1, rows(match_id, 1, 2, "old"))]) == set()
    new_epoch = await repo.take_match(match_id, "b")
    # the old owner (epoch 1) goes on writing: refused, nothing of it in the log
    assert await repo.commit_batch([MatchWrite(match_id, 1, rows(match_id, 3, 1, "stale"))]) == {match_id}
    assert await repo.commit_batch([MatchWrite(match_id, new_epoch, rows(match_id, 3, 2, "new"))]) == set()
    assert await log_of(repo, match_id) == [(1, "old"), (2, "old"), (3, "new"), (4, "new")]
    assert await version_of(repo, match_id) == 4


async def test_a_batch_mixing_a_fenced_match_and_healthy_ones_commits_the_healthy_ones(repo):
    healthy = [await new_match(repo) for _ in range(3)]
    fenced = await new_match(repo)
    await repo.take_match(fenced, "b")  # another node took it: epoch 2
    out_of_seq = await new_match(repo)
    writes = [MatchWrite(m, 1, rows(m, 1, 2)) for m in healthy]
    writes.insert(1, MatchWrite(fenced, 1, rows(fenced, 1, 3)))
    writes.append(MatchWrite(out_of_seq, 1, rows(out_of_seq, 2, 1)))  # seq 1 never written: a gap
    end = {"status": "finished", "outcome": {"ranks": {}}, "ended_at": time.time()}
    writes[0].update = end
    assert await repo.commit_batch(writes) == {fenced, out_of_seq}
    for m in healthy:
        assert [s for s, _ in await log_of(repo, m)] == [1, 2] and await version_of(repo, m) == 2
    assert await log_of(repo, fenced) == [] and await version_of(repo, fenced) == 0
    assert await log_of(repo, out_of_seq) == []
    assert (await repo.match(healthy[0]))["status"] == "finished"  # the end update rides with its write
    assert (await repo.match(healthy[1]))["status"] == "running"


async def test_concurrent_takeover_and_stale_write_never_both_win(repo):
    """Interleave the epoch bump with the old owner's write, both orders (Postgres row locks;
    SQLite serialises writers, so only the outcome is checked there)."""
    if repo.kind != "postgres":  # type: ignore[attr-defined]
        pytest.skip("row-lock interleaving is Postgres-only; SQLite serialises whole transactions")
    # 1) the bump is in flight (uncommitted) when the old owner writes: the write waits for the
    #    row lock, then re-checks its WHERE against the new epoch and is refused
    match_id = await new_match(repo)
    async with repo.engine.connect() as bumper:
        await bumper.begin()
        await bumper.execute(update(matches_t).where(matches_t.c.id == match_id)
                             .values(owner_epoch=matches_t.c.owner_epoch + 1, owner_node="b"))
        stale = asyncio.create_task(repo.commit_batch([MatchWrite(match_id, 1, rows(match_id, 1, 1, "stale"))]))
        await _wait_for_lock_wait(repo)
        assert not stale.done()
        await bumper.commit()
    assert await asyncio.wait_for(stale, 10) == {match_id}
    assert await log_of(repo, match_id) == []
    # 2) the old owner's write is in flight (row locked, uncommitted) when a node takes the match:
    #    the take waits, then the stale owner's *next* write is refused
    match_id = await new_match(repo)
    async with repo.engine.connect() as writer:
        await writer.begin()
        res = await writer.execute(update(matches_t).where(
            matches_t.c.id == match_id, matches_t.c.owner_epoch == 1, matches_t.c.version == 0).values(version=1))
        assert res.rowcount == 1
        await writer.execute(insert(actions_t), rows(match_id, 1, 1, "old"))
        take = asyncio.create_task(repo.take_match(match_id, "b"))
        await _wait_for_lock_wait(repo)
        assert not take.done()
        await writer.commit()
    assert await asyncio.wait_for(take, 10) == 2
    assert await repo.commit_batch([MatchWrite(match_id, 1, rows(match_id, 2, 1, "stale"))]) == {match_id}
    assert await repo.commit_batch([MatchWrite(match_id, 2, rows(match_id, 2, 1, "new"))]) == set()
    assert await log_of(repo, match_id) == [(1, "old"), (2, "new")]


async def _wait_for_lock_wait(repo: Repository, timeout: float = 10.0) -> None:
    """Until some backend of this database waits on a lock (the contended statement is blocked)."""
    deadline = time.monotonic() + timeout
    async with repo.engine.connect() as conn:
        while time.monotonic() < deadline:
            waiting = (await conn.execute(text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"))).scalar_one()
            await conn.rollback()
            if waiting:
                return
            await asyncio.sleep(0.01)
    raise AssertionError("the contended statement never waited for the row lock")


async def test_sqlite_commits_go_through_the_dedicated_committer(repo):
    if repo.kind != "sqlite":  # type: ignore[attr-defined]
        assert repo.log_committer is None
        return
    assert repo.log_committer is not None  # app/db/sqlite_log.py, not the engine


async def test_a_colliding_row_fails_the_whole_batch_with_integrity_error(repo):
    from sqlalchemy.exc import IntegrityError

    a, b = await new_match(repo), await new_match(repo)
    assert await repo.commit_batch([MatchWrite(a, 1, rows(a, 1, 1, "first"))]) == set()
    async with repo.engine.begin() as conn:  # a row at seq 2 that the fence does not know about
        await conn.execute(insert(actions_t), rows(a, 2, 1, "planted"))
    with pytest.raises(IntegrityError):
        await repo.commit_batch([MatchWrite(a, 1, rows(a, 2, 1, "clash")), MatchWrite(b, 1, rows(b, 1, 2, "b"))])
    assert await log_of(repo, b) == [] and await version_of(repo, b) == 0  # nothing of the batch
    assert await version_of(repo, a) == 1


async def test_the_last_record_writes_the_end_of_the_match(repo):
    match_id = await new_match(repo)
    end = {"id": match_id, "status": "finished", "outcome": {"ranks": {"0": 1}, "scores": {}, "reason": "won"},
           "ended_at": 123.5, "version": 2}
    assert await repo.commit_batch([MatchWrite(match_id, 1, rows(match_id, 1, 2), end)]) == set()
    row = await repo.match(match_id)
    assert (row["status"], row["outcome"], row["ended_at"], row["version"]) == (
        "finished", end["outcome"], 123.5, 2)
