"""Initial tables: votes, unmatched_panics, record_matches.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The models' UtcDateTime stores through this type; a migration must not import the models (they move on).
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "votes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("record_id", sa.String(length=128), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("place", sa.String(length=255), nullable=False),
        sa.Column("vote", sa.String(length=8), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.CheckConstraint("vote IN ('up', 'down')", name=op.f("ck_votes_vote_value")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_votes")),
        sa.UniqueConstraint(
            "platform",
            "record_id",
            "user_id",
            "place",
            name=op.f("uq_votes_platform_record_id_user_id_place"),
        ),
    )
    op.create_table(
        "unmatched_panics",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("path", sa.Text(), nullable=True),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("first_seen", TIMESTAMP, nullable=False),
        sa.Column("last_seen", TIMESTAMP, nullable=False),
        sa.Column("last_platform", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_unmatched_panics")),
        sa.UniqueConstraint("fingerprint", name=op.f("uq_unmatched_panics_fingerprint")),
    )
    op.create_index(op.f("ix_unmatched_panics_last_seen"), "unmatched_panics", ["last_seen"])
    op.create_table(
        "record_matches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("record_id", sa.String(length=128), nullable=False),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("first_seen", TIMESTAMP, nullable=False),
        sa.Column("last_seen", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_record_matches")),
        sa.UniqueConstraint("record_id", "platform", name=op.f("uq_record_matches_record_id_platform")),
    )
    op.create_index(op.f("ix_record_matches_last_seen"), "record_matches", ["last_seen"])


def downgrade() -> None:
    op.drop_index(op.f("ix_record_matches_last_seen"), table_name="record_matches")
    op.drop_table("record_matches")
    op.drop_index(op.f("ix_unmatched_panics_last_seen"), table_name="unmatched_panics")
    op.drop_table("unmatched_panics")
    op.drop_table("votes")
