"""the meta-game of Hold'em Conquest: wallets, owned specials, the ledger, spins, settlements, loadouts

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 20:45:00

- ``wallets``: crystals (CHECK >= 0, so no statement can make a balance negative) and the committed
  seed of the player's next spin (its hash is public before the spin).
- ``owned_specials``: a special and the finished matches it still lasts (CHECK >= 0).
- ``ledger``: every change of a balance; ``idem_key`` unique (a match use counts once).
- ``spins``: every spin with what re-checks it.
- ``match_settlements``: matches whose specials' lifetimes were counted.
- ``lobby_seats.loadout``: the specials a seat brings.
"""
import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'wallets',
        sa.Column('player_id', sa.String(length=32), sa.ForeignKey('players.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('crystals', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('next_spin_seed', sa.String(length=64), nullable=False),
        sa.Column('next_spin_seed_hash', sa.String(length=64), nullable=False),
        sa.Column('updated_at', sa.Float(), nullable=False),
        sa.CheckConstraint('crystals >= 0', name='ck_wallets_crystals_nonnegative'),
    )
    op.create_table(
        'owned_specials',
        sa.Column('player_id', sa.String(length=32), sa.ForeignKey('players.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('special', sa.String(length=32), primary_key=True),
        sa.Column('matches_left', sa.Integer(), nullable=False, server_default='0'),
        sa.Column('updated_at', sa.Float(), nullable=False),
        sa.CheckConstraint('matches_left >= 0', name='ck_owned_specials_nonnegative'),
    )
    op.create_table(
        'ledger',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('player_id', sa.String(length=32), sa.ForeignKey('players.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('asset', sa.String(length=32), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('delta', sa.BigInteger(), nullable=False),
        sa.Column('balance_after', sa.BigInteger(), nullable=False),
        sa.Column('ref', sa.String(length=64), nullable=True),
        sa.Column('actor', sa.String(length=64), nullable=True),
        sa.Column('reason', sa.String(length=200), nullable=True),
        sa.Column('idem_key', sa.String(length=160), nullable=True, unique=True),
        sa.Column('created_at', sa.Float(), nullable=False),
    )
    op.create_index('ix_ledger_player_id', 'ledger', ['player_id'])
    op.create_table(
        'spins',
        sa.Column('id', sa.String(length=32), primary_key=True),
        sa.Column('player_id', sa.String(length=32), sa.ForeignKey('players.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('seed', sa.String(length=64), nullable=False),
        sa.Column('seed_hash', sa.String(length=64), nullable=False),
        sa.Column('client_seed', sa.String(length=64), nullable=False),
        sa.Column('price', sa.Integer(), nullable=False),
        sa.Column('strip', sa.JSON(), nullable=False),
        sa.Column('paytable', sa.JSON(), nullable=False),
        sa.Column('reels', sa.JSON(), nullable=False),
        sa.Column('prize', sa.JSON(), nullable=True),
        sa.Column('created_at', sa.Float(), nullable=False),
    )
    op.create_index('ix_spins_player_id', 'spins', ['player_id'])
    op.create_table(
        'match_settlements',
        sa.Column('match_id', sa.String(length=32), sa.ForeignKey('matches.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('uses', sa.Integer(), nullable=False, server_default='0'),
        sa.Column('settled_at', sa.Float(), nullable=False),
    )
    with op.batch_alter_table('lobby_seats', schema=None) as batch_op:
        batch_op.add_column(sa.Column('loadout', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('lobby_seats', schema=None) as batch_op:
        batch_op.drop_column('loadout')
    op.drop_table('match_settlements')
    op.drop_index('ix_spins_player_id', table_name='spins')
    op.drop_table('spins')
    op.drop_index('ix_ledger_player_id', table_name='ledger')
    op.drop_table('ledger')
    op.drop_table('owned_specials')
    op.drop_table('wallets')
