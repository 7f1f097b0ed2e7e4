"""Migration 0005: usernames' keys recomputed with the look-alike folding (``app.api.names``), on a
real SQLite database taken to 0004 first. A username that now imitates an older one keeps its old
key (nothing is lost), the others get the new key, so sign-in by the new key finds them."""
from __future__ import annotations

import sqlite3

from app.api.names import username_key
from app.db.migrate import upgrade


def test_the_keys_are_recomputed_and_a_new_collision_keeps_the_old_key(tmp_path):
    path = tmp_path / "keys.db"
    url = f"sqlite+aiosqlite:///{path}"
    upgrade(url, "0004")
    db = sqlite3.connect(path)
    rows = [  # (player, username, the key the folding before 0005 gave, created_at)
        ("p1", "nina48a7", "nlna48a7", 1.0),
        ("p2", "ΝΙΝΑ48Α7", "vlva48a7", 2.0),  # Greek capitals: imitates p1's, claimed later
        ("p3", "ΜΑΡΚΟ", "uapko", 3.0),  # Greek capitals, imitating nobody
        ("p4", "bi11y", "bl11y", 4.0),  # ASCII with digits that read as letters
    ]
    for player, username, key, created in rows:
        db.execute("INSERT INTO players (id, name, role, token_hash, created_at) VALUES (?, ?, 'player', ?, ?)",
                   (player, username, "h" + player, created))
        db.execute("INSERT INTO accounts (player_id, username, username_key, password_hash, created_at, updated_at) "
                   "VALUES (?, ?, ?, 'x', ?, ?)", (player, username, key, created, created))
    db.commit()
    db.close()

    upgrade(url)

    db = sqlite3.connect(path)
    keys = dict(db.execute("SELECT player_id, username_key FROM accounts").fetchall())
    db.close()
    assert keys["p1"] == "nlna48a7" == username_key("nina48a7")  # ASCII: unchanged
    assert keys["p2"] == "vlva48a7"  # would collide with p1: keeps its old key
    assert keys["p4"] == username_key("bi11y") == username_key("billy") == "bllly"
    # the new key (it looks like Latin MAPKO; since 0007 the m is written as the rn that imitates it)
    assert keys["p3"] == username_key("ΜΑΡΚΟ") == "rnapko"


def test_0007_gives_a_look_alike_the_first_claim_s_key_and_the_later_one_signs_in_by_its_exact_name(tmp_path):
    """Migration 0007 (separators dropped; rn, vv, cl read as m, w, d): of two usernames that now
    look alike the one claimed first gets the shared key, so any look-alike form finds it; the later
    one keeps its old key if free, else ``~`` + its id, and signs in by its exact username."""
    import asyncio

    from app.db.accounts import AccountsRepository
    from app.db.database import make_engine

    path = tmp_path / "skeletons.db"
    url = f"sqlite+aiosqlite:///{path}"
    upgrade(url, "0005")
    db = sqlite3.connect(path)
    rows = [  # (player, username, its key under 0005, created_at)
        ("p1", "mark", "mark", 1.0),
        ("p2", "rnark", "rnark", 2.0),  # imitates p1, and its old key is p1's new one
        ("p3", "alice", "allce", 3.0),
        ("p4", "a.lice", "a.llce", 4.0),  # imitates p3; its old key is free
        ("p5", "Wendy_W", "vvendy_vv", 5.0),  # under 0005 it had "wendy_w": a key of no one now
    ]
    for player, username, key, created in rows:
        db.execute("INSERT INTO players (id, name, role, token_hash, created_at) VALUES (?, ?, 'player', ?, ?)",
                   (player, username, "h" + player, created))
        db.execute("INSERT INTO accounts (player_id, username, username_key, password_hash, created_at, updated_at) "
                   "VALUES (?, ?, ?, 'x', ?, ?)", (player, username, key, created, created))
    db.commit()
    db.close()

    upgrade(url)

    db = sqlite3.connect(path)
    keys = dict(db.execute("SELECT player_id, username_key FROM accounts").fetchall())
    indexes = {r[1] for r in db.execute("PRAGMA index_list('accounts')").fetchall()}
    db.close()
    assert keys == {"p1": username_key("mark"), "p2": "~p2", "p3": username_key("alice"), "p4": "a.llce",
                    "p5": username_key("Wendy_W")}
    assert username_key("mark") == username_key("rnark") and username_key("alice") == username_key("a.lice")
    assert "ix_accounts_username" in indexes

    async def who(typed: str) -> str | None:
        engine = make_engine(url)
        try:
            found = await AccountsRepository(engine).account_for_sign_in(typed, username_key(typed))
        finally:
            await engine.dispose()
        return found["player_id"] if found else None

    async def all_of(names: list[str]) -> list[str | None]:
        return [await who(n) for n in names]

    assert asyncio.run(all_of(["mark", "MARK", "rnark", "alice", "A.LICE", "a.lice", "wendyw", "vvendyvv"])) == [
        "p1", "p1", "p2", "p3", "p3", "p4", "p5", "p5"]
