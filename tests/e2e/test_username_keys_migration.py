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
    assert keys["p3"] == username_key("ΜΑΡΚΟ") == "mapko"  # the new key (it looks like Latin MAPKO): found at sign-in
