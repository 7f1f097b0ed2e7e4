"""accounts, several tokens per player, ratings and their changes, indexes for cursor paging

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 21:45:00

- ``player_tokens``: extra bearer tokens of a player (sign-in from another device), SHA-256 hashed;
  ``players.token_hash`` stays the player's first token (guests, bots and the admin keep working).
- ``accounts``: username (unique on its normalised ``username_key``) and argon2 password hash.
- ``ratings``: one openskill rating per player per game; ``ix_ratings_leaderboard`` orders it.
- ``rating_changes``: one row per ``(match_id, player_id)`` (primary key): a match rates once.
- ``match_ratings``: ended matches the ratings have seen (the sweep looks for matches without one).
- ``ix_matches_created`` / ``ix_lobbies_created``: keyset paging by ``(created_at, id)``.
"""
import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'player_tokens',
        sa.Column('id', sa.String(length=32), primary_key=True),
        sa.Column('player_id', sa.String(length=32), sa.ForeignKey('players.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('token_hash', sa.String(length=64), nullable=False, unique=True),
        sa.Column('label', sa.String(length=64), nullable=True),
        sa.Column('created_at', sa.Float(), nullable=False),
    )
    op.create_index('ix_player_tokens_player_id', 'player_tokens', ['player_id'])
    op.create_table(
        'accounts',
        sa.Column('player_id', sa.String(length=32), sa.ForeignKey('players.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('username', sa.String(length=32), nullable=False),
        sa.Column('username_key', sa.String(length=64), nullable=False, unique=True),
        sa.Column('password_hash', sa.String(length=256), nullable=False),
        sa.Column('created_at', sa.Float(), nullable=False),
        sa.Column('updated_at', sa.Float(), nullable=False),
    )
    op.create_table(
        'ratings',
        sa.Column('player_id', sa.String(length=32), sa.ForeignKey('players.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('game', sa.String(length=32), primary_key=True),
        sa.Column('mu', sa.Float(), nullable=False),
        sa.Column('sigma', sa.Float(), nullable=False),
        sa.Column('ordinal', sa.Float(), nullable=False),
        sa.Column('matches', sa.Integer(), nullable=False, server_default='0'),
        sa.Column('wins', sa.Integer(), nullable=False, server_default='0'),
        sa.Column('updated_at', sa.Float(), nullable=False),
    )
    op.create_index('ix_ratings_leaderboard', 'ratings', ['game', 'ordinal', 'player_id'])
    op.create_table(
        'rating_changes',
        sa.Column('match_id', sa.String(length=32), sa.ForeignKey('matches.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('player_id', sa.String(length=32), sa.ForeignKey('players.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('game', sa.String(length=32), nullable=False),
        sa.Column('seat', sa.Integer(), nullable=False),
        sa.Column('rank', sa.Integer(), nullable=False),
        sa.Column('mu_before', sa.Float(), nullable=False),
        sa.Column('sigma_before', sa.Float(), nullable=False),
        sa.Column('mu_after', sa.Float(), nullable=False),
        sa.Column('sigma_after', sa.Float(), nullable=False),
        sa.Column('ordinal_after', sa.Float(), nullable=False),
        sa.Column('created_at', sa.Float(), nullable=False),
    )
    op.create_index('ix_rating_changes_player_id', 'rating_changes', ['player_id'])
    op.create_table(
        'match_ratings',
        sa.Column('match_id', sa.String(length=32), sa.ForeignKey('matches.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('rated', sa.Integer(), nullable=False, server_default='0'),
        sa.Column('rated_at', sa.Float(), nullable=False),
    )
    op.create_index('ix_matches_created', 'matches', ['created_at', 'id'])
    op.create_index('ix_lobbies_created', 'lobbies', ['created_at', 'id'])


def downgrade() -> None:
    op.drop_index('ix_lobbies_created', table_name='lobbies')
    op.drop_index('ix_matches_created', table_name='matches')
    op.drop_table('match_ratings')
    op.drop_index('ix_rating_changes_player_id', table_name='rating_changes')
    op.drop_table('rating_changes')
    op.drop_index('ix_ratings_leaderboard', table_name='ratings')
    op.drop_table('ratings')
    op.drop_table('accounts')
    op.drop_index('ix_player_tokens_player_id', table_name='player_tokens')
    op.drop_table('player_tokens')
