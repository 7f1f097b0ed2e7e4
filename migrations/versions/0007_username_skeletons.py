"""usernames' keys recomputed with separators dropped and rn, vv, cl read as m, w, d; an index
on the username for sign-in by the exact name

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 09:00:00

``accounts.username_key`` is ``app.api.names.username_key``. It now also drops the separators
``.``, ``_`` and ``-`` and writes the letters that pairs imitate as those pairs (``m`` as ``rn``,
``w`` as ``vv``, ``d`` as ``cl``), so ``m.ark``, ``rnark`` and ``Mark`` are one username
(``docs/decisions.md``, "Usernames"). Every stored key is computed again here.

Two existing usernames may now share a key (one imitated the other). The one claimed first gets
the key, so typing its name in any look-alike form finds it; each later one keeps its old key when
no one else holds it, else ``~`` + its player id (a key no username folds to), with a warning naming
both players: it still signs in by its exact username (``POST /accounts/sign-in`` tries the exact
name before the key, through the new index ``ix_accounts_username``). Nothing is deleted. Keys are
moved through temporary values, so the unique index never sees two rows with one key. Downgrade
drops the index and keeps the new keys (the old ones are gone).
"""
import logging

import sqlalchemy as sa
from alembic import op

from app.api.names import username_key

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

log = logging.getLogger("alembic.runtime.migration")


def upgrade() -> None:
    conn = op.get_bind()
    rows = conn.execute(sa.text(
        "SELECT player_id, username, username_key FROM accounts ORDER BY created_at, player_id")).fetchall()
    final: dict[str, str] = {}
    owner: dict[str, str] = {}
    for row in rows:  # the first claim of each new key gets it
        key = username_key(row.username)
        if key not in owner:
            owner[key] = row.player_id
            final[row.player_id] = key
    used = set(final.values())
    for row in rows:  # every later look-alike: a key of its own
        if row.player_id in final:
            continue
        key = row.username_key if row.username_key not in used else "~" + row.player_id
        final[row.player_id] = key
        used.add(key)
        log.warning("username of player %s now looks like that of player %s (claimed earlier): it keeps a key "
                    "of its own and signs in by its exact username", row.player_id,
                    owner[username_key(row.username)])
    changed = [row for row in rows if final[row.player_id] != row.username_key]
    for row in changed:
        conn.execute(sa.text("UPDATE accounts SET username_key = :key WHERE player_id = :id"),
                     {"key": "~~" + row.player_id, "id": row.player_id})
    for row in changed:
        conn.execute(sa.text("UPDATE accounts SET username_key = :key WHERE player_id = :id"),
                     {"key": final[row.player_id], "id": row.player_id})
    op.create_index("ix_accounts_username", "accounts", ["username"])


def downgrade() -> None:
    op.drop_index("ix_accounts_username", table_name="accounts")
