"""Several replicas on one PostgreSQL: they migrate at the same moment without a race, and every replica's
votes and statistics are everyone's."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import Engine

from adapters.storage import SqlStore, upgrade_database
from bot.lookup import PanicLookup
from tests.adapters.storage.support import private_schema
from tests.support.catalogs import seeds_catalog


def test_replicas_starting_together_migrate_once_without_failing(postgres_admin: Engine) -> None:
    with private_schema(postgres_admin) as url, ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: upgrade_database(url), range(4)))
        assert results == [None, None, None, None]
        with SqlStore(url) as store:  # the schema is complete and usable
            store.record_vote(record_id="r", user_id="U", vote="up", platform="slack", place="C/1")
            assert store.tally(record_id="r", platform="slack", place="C/1") == {"up": 1, "down": 0}


def test_two_replicas_share_votes_and_match_counts(postgres_admin: Engine) -> None:
    lookup = PanicLookup(seeds_catalog())
    with private_schema(postgres_admin) as url:
        upgrade_database(url)
        with SqlStore(url) as replica_a, SqlStore(url) as replica_b:
            replica_a.record_vote(record_id="8d1d2fa6df3880bd", user_id="U1", vote="up", platform="slack",
                                  place="C/1")  # fmt: skip
            replica_b.record_vote(record_id="8d1d2fa6df3880bd", user_id="U2", vote="down", platform="slack",
                                  place="C/1")  # fmt: skip
            replica_b.record_vote(record_id="8d1d2fa6df3880bd", user_id="U1", vote="down", platform="slack",
                                  place="C/1")  # fmt: skip  # U1 changes their mind on the other replica
            for replica in (replica_a, replica_b):
                assert replica.tally(record_id="8d1d2fa6df3880bd", platform="slack", place="C/1") == {
                    "up": 0,
                    "down": 2,
                }
            replica_a.record_lookup(lookup.lookup("avg pool 2d backward"), "slack")
            replica_b.record_lookup(lookup.lookup("avg pool 2d backward"), "discord")
            report = replica_a.report(limit=5, catalog_ids=[r.id for r in lookup.matcher.records])
            assert "8d1d2fa6df3880bd" not in report.never_matched
            assert report.most_downvoted[0].record_id == "8d1d2fa6df3880bd"
