"""idempotency keys: the first answer to a request that spends or grants

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02 23:00:00

``idempotency_keys``: one row per (player, ``Idempotency-Key``) of a spin, an admin's grant, a claim
or a lobby start, written in the same transaction as what it spends or grants, so a repeat on any
node gets the first answer and changes nothing (docs/protocol.md, "Idempotency keys").
"""
import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'idempotency_keys',
        sa.Column('player_id', sa.String(length=32), sa.ForeignKey('players.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('key', sa.String(length=255), primary_key=True),
        sa.Column('fingerprint', sa.String(length=64), nullable=False),
        sa.Column('response', sa.JSON(), nullable=True),
        sa.Column('created_at', sa.Float(), nullable=False),
    )
    op.create_index('ix_idempotency_keys_created_at', 'idempotency_keys', ['created_at'])


def downgrade() -> None:
    op.drop_index('ix_idempotency_keys_created_at', table_name='idempotency_keys')
    op.drop_table('idempotency_keys')
