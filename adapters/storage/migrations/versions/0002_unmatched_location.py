"""Unmatched panics keep the path as pasted (it names the release: `burn-fusion-0.21.0/src/...`) and the line.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("unmatched_panics") as batch:
        batch.add_column(sa.Column("raw_path", sa.Text(), nullable=True))
        batch.add_column(sa.Column("line", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("unmatched_panics") as batch:
        batch.drop_column("line")
        batch.drop_column("raw_path")
