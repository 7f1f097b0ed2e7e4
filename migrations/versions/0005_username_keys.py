"""usernames' keys recomputed with the look-alike folding of 2 Dec 2026

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 10:30:00

``accounts.username_key`` (the unique form a username is claimed and signed in by) is
``app.api.names.username_key``. On 2 Dec 2026 it began to fold look-alikes through Unicode's
confusables data (UTS 39): Greek capitals, Cherokee, small capitals …, and to read the digits
``0`` and ``1`` as ``o`` and ``l`` (``docs/decisions.md``, "Usernames"). A username typed at sign-in
is looked up by its new key, so every stored key is computed again here: ASCII usernames without
those digits keep their key. Should two existing usernames now share a key (one
imitated the other before the change), the one claimed later keeps its old key and a warning names
it: an operator decides; nothing is deleted. Downgrade keeps the new keys (the old ones are gone).
"""
import logging

import sqlalchemy as sa
from alembic import op

from app.api.names import username_key

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

log = logging.getLogger("alembic.runtime.migration")


def upgrade() -> None:
    conn = op.get_bind()
    rows = conn.execute(sa.text(
        "SELECT player_id, username, username_key FROM accounts ORDER BY created_at, player_id")).fetchall()
    taken = {row.username_key for row in rows}
    for row in rows:
        key = username_key(row.username)
        if key == row.username_key:
            continue
        if key in taken:
            log.warning("username of player %s now looks like another one's: it keeps its old key", row.player_id)
            continue
        conn.execute(sa.text("UPDATE accounts SET username_key = :key WHERE player_id = :id"),
                     {"key": key, "id": row.player_id})
        taken.discard(row.username_key)
        taken.add(key)


def downgrade() -> None:
    pass
