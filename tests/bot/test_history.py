"""A record's history across releases, as the card's data: first release, condition changes, removal."""

from __future__ import annotations

import json

from bot.history import history_json, record_history
from bot.lookup import PanicLookup
from bot.records import default_catalog
from bot.releases import ReleaseTable
from tests.bot.test_releases import AFTER_0161, BURN, MODULE_BASE, RELEASE_ROWS, group
from tests.support.cards import REPORTED_PASTE


def table_with(*rows: dict) -> ReleaseTable:
    table = ReleaseTable()
    table.add_release_rows(RELEASE_ROWS)
    table.add_site_rows(rows)
    return table


def test_a_changed_condition_is_dated_to_the_first_release_that_reads_it() -> None:
    table = table_with(
        {
            "id": "check",
            "repo": BURN,
            "filePath": MODULE_BASE,
            "releases": [
                group(["v0.16.1", AFTER_0161], "burn-core", 120, condition="lhs.dims() != rhs.dims()"),
                group(["v0.16.0"], "burn-core", 110, condition="lhs.shape != rhs.shape"),
                group(["v0.15.0"], "burn-core", 100, condition="lhs.shape != rhs.shape"),
            ],
        }
    )
    history = history_json(record_history(table, "check"))
    assert history is not None
    assert history["first"] == {"release": "v0.15.0", "crate": "burn-core", "version": "0.15.0"}
    assert history["releases"] == 4
    assert history["condition_changes"] == [
        {
            "release": "v0.16.1",
            "crate": "burn-core",
            "version": "0.16.1",
            "before": ["lhs.shape != rhs.shape"],
            "after": ["lhs.dims() != rhs.dims()"],
        }
    ]
    # v0.17.0-pre.1 follows the newest release that has it: the first that no longer raises it.
    assert history["gone_since"] == {
        "release": "v0.17.0-pre.1",
        "crate": "burn-core",
        "version": "0.17.0-pre.1",
    }
    assert history["removed_by"] is None


def test_the_removal_commit_is_named_when_the_history_table_knows_it() -> None:
    table = table_with(
        {
            "id": "gone",
            "repo": BURN,
            "filePath": MODULE_BASE,
            "releases": [group(["v0.15.0"], "burn-core", 9)],
        }
    )
    row = {
        "id": "gone",
        "lastRef": "v0.15.0",
        "goneRef": "v0.16.0",
        "commit": "a1b2c3d4e5",
        "subject": "Fix record loading (#2780)",
        "pullRequest": 2780,
    }
    table.add_history_text(json.dumps(row) + "\n")
    history = history_json(record_history(table, "gone"))
    assert history is not None and history["gone_since"]["release"] == "v0.16.0"
    assert history["removed_by"] == {
        "commit": "a1b2c3d4e5",
        "subject": "Fix record loading (#2780)",
        "pull_request": 2780,
        "last_release": "v0.15.0",
    }
    assert history["condition_changes"] == []


def test_a_record_no_release_has_has_no_history() -> None:
    assert record_history(table_with(), "hand-written") is None
    assert history_json(None) is None


def test_the_lookup_json_card_carries_the_answered_records_history() -> None:
    service = PanicLookup(default_catalog())
    answer = service.answer_json(service.lookup(REPORTED_PASTE))
    history = answer["card"]["history"]
    assert history is not None
    assert history["first"]["crate"] == "burn-ir" and history["releases"] >= 1
    assert history == service.history_json(answer["card"]["record_id"])
