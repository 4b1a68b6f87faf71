"""A record's history across releases, as the card's data: first release, condition changes, removal."""

from __future__ import annotations

import json

from bot.history import Successor, history_json, record_history, successor
from bot.lookup import PanicLookup, answer_site, condition_note
from bot.records import Record, default_catalog
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
            "changed_by": None,  # no history table row names the commit
        }
    ]
    # v0.17.0-pre.1 follows the newest release that has it: the first that no longer raises it.
    assert history["gone_since"] == {
        "release": "v0.17.0-pre.1",
        "crate": "burn-core",
        "version": "0.17.0-pre.1",
    }
    assert history["removed_by"] is None


def test_the_condition_change_commit_is_named_when_the_history_table_knows_it() -> None:
    table = table_with(
        {
            "id": "check",
            "repo": BURN,
            "filePath": MODULE_BASE,
            "releases": [
                group(["v0.16.1"], "burn-core", 120, condition="lhs.dims() != rhs.dims()"),
                group(["v0.15.0", "v0.16.0"], "burn-core", 100, condition="lhs.shape != rhs.shape"),
            ],
        }
    )
    rows = [
        # a change row of another release, a damaged one, and the one for v0.16.1
        {
            "id": "check",
            "sinceRef": "v0.15.0",
            "changedRef": "v0.16.0",
            "commit": "0000000000",
            "subject": "x",
        },
        {"id": "check", "changedRef": "v0.16.1", "commit": "1111111111"},
        {
            "id": "check",
            "repo": BURN,
            "sinceRef": "v0.16.0",
            "changedRef": "v0.16.1",
            "commit": "a1b2c3d4e5",
            "subject": "Compare dims in the check (#2800)",
            "pullRequest": 2800,
        },
    ]
    table.add_history_text("".join(json.dumps(row) + "\n" for row in rows))
    history = record_history(table, "check")
    assert history is not None and len(history.changes) == 1
    change = history.changes[0]
    assert (
        change.commit is not None and change.commit.said == '"Compare dims in the check (#2800)" (a1b2c3d4e5)'
    )
    data = history_json(history)
    assert data is not None
    assert data["condition_changes"][0]["changed_by"] == {
        "commit": "a1b2c3d4e5",
        "subject": "Compare dims in the check (#2800)",
        "pull_request": 2800,
        "since_release": "v0.16.0",
    }
    assert data["removed_by"] is None  # a change row is no removal
    assert table.removal("check") is None
    # The card's line names the change nearest the release shown, with its commit.
    v0150 = table.sites_of("check")[0].release
    assert condition_note(table, "check", v0150, "burn-core") == (
        'In burn-core 0.16.1 (commit "Compare dims in the check (#2800)" (a1b2c3d4e5)): '
        "`lhs.shape != rhs.shape` before, `lhs.dims() != rhs.dims()` from then on."
    )
    assert condition_note(table, "other", v0150, "burn-core") == ""


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


# --- a message carried on by another record: placeholders renamed, or lightly reworded ------------------

OLD, SAME, REWORDED, OTHER = "old", "same", "reworded", "other"
MESSAGES = {
    OLD: "Cannot convert {:?} to i64",
    SAME: "Cannot convert {self:?} to i64",
    REWORDED: "Cannot convert {self:?} to i64!",
    OTHER: "Could not get cache directory",
}


def carried_table(successors: dict[str, str]) -> ReleaseTable:
    """OLD in v0.15.0-v0.16.0, then each successor (id -> function) from v0.16.1 in the same file."""
    rows = [
        {
            "id": OLD,
            "repo": BURN,
            "filePath": MODULE_BASE,
            "releases": [group(["v0.15.0", "v0.16.0"], "burn-core", 10, function="convert")],
        }
    ]
    rows += [
        {
            "id": record_id,
            "repo": BURN,
            "filePath": MODULE_BASE,
            "releases": [group(["v0.16.1", AFTER_0161, "v0.17.0-pre.1"], "burn-core", 12, function=function)],
        }
        for record_id, function in successors.items()
    ]
    table = table_with(*rows)
    removal = {
        "id": OLD,
        "lastRef": "v0.16.0",
        "goneRef": "v0.16.1",
        "commit": "c0ffee1234",
        "subject": "Rename",
    }
    table.add_history_text(json.dumps(removal) + "\n")
    return table


def literal_of(record_id: str) -> str | None:
    return " ".join(MESSAGES[record_id].replace("{:?}", "").replace("{self:?}", "").split()).lower()


def record_of(record_id: str) -> Record:
    return Record(
        id=record_id, errorMessage=MESSAGES[record_id], repo=BURN, filePath=MODULE_BASE, lineNumber=10
    )


def test_the_same_words_under_renamed_placeholders_are_not_gone() -> None:
    table = carried_table({SAME: "convert"})
    assert successor(table, OLD, literal_of) == Successor(SAME, same_text=True)
    site = answer_site(table, record_of(OLD), None, record_of=record_of)
    assert site.gone_since is None and site.upgrade is None
    assert site.note in (None, "")
    history = history_json(record_history(table, OLD, literal_of))
    assert history is not None and history["gone_since"] is None
    assert history["continued_by"] == {"record_id": SAME, "same_text": True}
    # Without the catalog's messages, the table alone says gone (what cards said before).
    assert answer_site(table, record_of(OLD), None).gone_since is not None


def test_a_light_rewording_in_the_same_function_is_said_to_be_one_and_no_upgrade_is_offered() -> None:
    table = carried_table({REWORDED: "convert"})
    site = answer_site(table, record_of(OLD), None, record_of=record_of)
    assert site.upgrade is None
    reads = '"Cannot convert {self:?} to i64!"'
    assert site.note == f"Reworded in burn-core 0.16.1: from then on the same check reads {reads}."


def test_another_message_or_another_function_is_no_successor() -> None:
    assert successor(carried_table({OTHER: "convert"}), OLD, literal_of) is None
    assert successor(carried_table({REWORDED: "elsewhere"}), OLD, literal_of) is None
    site = answer_site(carried_table({OTHER: "convert"}), record_of(OLD), None, record_of=record_of)
    assert site.upgrade is not None and "c0ffee1234" in site.upgrade


def test_a_pasted_tensor_check_from_before_a_placeholder_rename_is_not_called_gone() -> None:
    paste = (
        "thread 'main' panicked at /home/u/.cargo/registry/src/index.crates.io-6f17d22bba15001f/"
        "burn-tensor-0.17.1/src/tensor/api/check.rs:365:17:\n"
        "=== Tensor Operation Error ===\n  Operation: 'Squeeze'\n  Reason:\n"
        "    1. Dimension index 5 is out of bounds for tensor dimensions 3.\n"
    )
    service = PanicLookup(default_catalog())
    answer = service.answer_json(service.lookup(paste))
    assert answer["site"]["version"] == "0.17.1"
    # burn-tensor 0.18.0 prints the same words from `{dim}` instead of `{}`: the message is not gone.
    assert answer["site"]["gone_since"] is None and answer["site"]["note"] is None
