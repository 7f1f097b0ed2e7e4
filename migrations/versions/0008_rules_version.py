"""matches.rules_version: the rules a match is played under

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03 12:00:00

``matches.rules_version``: the game's rules version (``GameInfo.rules_version``) the match started
under; only an engine of that version replays, runs or verifies its log (``app.games.versions``,
``docs/decisions.md``, "Rules versions"). Every match that exists when this runs was played under
the code before it, version 1 of each of the three games, so existing rows get 1. The column keeps
``DEFAULT 1`` for the nodes of that code still running during a rolling upgrade (they insert
matches without the column, and they play version 1); every later node writes the version itself.
"""
import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('matches', schema=None) as batch_op:
        batch_op.add_column(sa.Column('rules_version', sa.Integer(), nullable=False, server_default='1'))


def downgrade() -> None:
    with op.batch_alter_table('matches', schema=None) as batch_op:
        batch_op.drop_column('rules_version')
