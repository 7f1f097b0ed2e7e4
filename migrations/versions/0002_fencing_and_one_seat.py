"""fencing epoch per match; one seat per player per lobby; matches.version is the durable version

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 20:50:00

- ``matches.owner_epoch``: the fencing token. A node that takes a running match over raises it in
  the database before rebuilding the match; every log write is conditional on it (see
  ``Repository.commit_batch``), so a node that lost the match can no longer write.
- ``matches.owner_node``: which node holds that epoch (for operators).
- ``matches.version`` now always holds the last durable version (it was only set at the end);
  log writes also check it, so a match's records can only become durable in sequence.
- ``lobby_seats (lobby_id, player_id)`` unique: one seat per player per lobby (empty seats have a
  NULL player, and NULLs are distinct in both Postgres and SQLite). Duplicate seats left by the old
  race are cleared first (the lowest seat is kept).
"""
import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('matches', schema=None) as batch_op:
        batch_op.add_column(sa.Column('owner_epoch', sa.BigInteger(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('owner_node', sa.String(length=64), nullable=True))
    op.execute(
        "UPDATE matches SET version = COALESCE("
        "(SELECT MAX(a.seq) FROM match_actions a WHERE a.match_id = matches.id), 0)"
    )
    op.execute(
        "UPDATE lobby_seats SET player_id = NULL WHERE player_id IS NOT NULL AND seat > "
        "(SELECT MIN(s2.seat) FROM lobby_seats s2 WHERE s2.lobby_id = lobby_seats.lobby_id "
        "AND s2.player_id = lobby_seats.player_id)"
    )
    with op.batch_alter_table('lobby_seats', schema=None) as batch_op:
        batch_op.create_index('uq_lobby_seats_player', ['lobby_id', 'player_id'], unique=True)


def downgrade() -> None:
    with op.batch_alter_table('lobby_seats', schema=None) as batch_op:
        batch_op.drop_index('uq_lobby_seats_player')
    with op.batch_alter_table('matches', schema=None) as batch_op:
        batch_op.drop_column('owner_node')
        batch_op.drop_column('owner_epoch')
