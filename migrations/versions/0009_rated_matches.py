"""rated lobbies, weighted rating changes, provisional ratings

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04 12:00:00

- ``lobbies.rated``: its match may change ratings (quick play, a rematch of a rated match, a lobby
  made with ``rated: true``); it does only when every seat is an account (docs/decisions.md,
  "Rated matches"). Existing lobbies are unrated.
- ``rating_changes.weight``: how much of openskill's change was applied (the repeated-opponent
  rule); existing changes were applied whole (1).
- ``ratings.weighted_matches``: rated matches counted by their weight; a rating is provisional (off
  the leaderboard) below ``RATING_PROVISIONAL_MATCHES``. Existing rows count their matches whole.
- ``ix_rating_changes_player_created``: the repeated-opponent rule counts a player's recent changes.
"""
import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('lobbies') as batch:
        batch.add_column(sa.Column('rated', sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table('rating_changes') as batch:
        batch.add_column(sa.Column('weight', sa.Float(), nullable=False, server_default='1'))
    with op.batch_alter_table('ratings') as batch:
        batch.add_column(sa.Column('weighted_matches', sa.Float(), nullable=False, server_default='0'))
    op.execute("UPDATE ratings SET weighted_matches = matches")
    op.create_index('ix_rating_changes_player_created', 'rating_changes', ['player_id', 'created_at'])


def downgrade() -> None:
    op.drop_index('ix_rating_changes_player_created', table_name='rating_changes')
    with op.batch_alter_table('ratings') as batch:
        batch.drop_column('weighted_matches')
    with op.batch_alter_table('rating_changes') as batch:
        batch.drop_column('weight')
    with op.batch_alter_table('lobbies') as batch:
        batch.drop_column('rated')
