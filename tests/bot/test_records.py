"""Loading catalogs: the seeds' format, bare records, and every kind of bad line without dying on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from bot.records import (
    DEFAULT_CATALOG_NAME,
    Catalog,
    Record,
    default_catalog,
    load_catalog,
    parse_catalog_text,
)

SEEDS_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "seeds.jsonl"
SEED_VERSION = "2026-09-12T17:17:11.597Z"
REVIEWED_VERSION = "2026-12-04T00:00:00.000Z"
AVG_POOL_ID = "8d1d2fa6df3880bd"
SEED_IDS = {"5c5da46720dbbf10", "d59d5538758c7e08", AVG_POOL_ID}


def line(record: dict, version: str | None = "v1") -> str:
    """One JSONL line in the seeds' format (`{"record": ..., "datasetVersion": ...}`)."""
    wrapped: dict = {"record": record}
    if version is not None:
        wrapped["datasetVersion"] = version
    return json.dumps(wrapped)


def rec(record_id: str, message: str = "something broke", **fields: object) -> dict:
    return {"id": record_id, "errorMessage": message, **fields}


def ids(catalog: Catalog) -> list[str]:
    return [entry.record.id for entry in catalog.entries]


def problems(catalog: Catalog) -> list[tuple[str, int]]:
    return [(problem.source, problem.line) for problem in catalog.errors]


# --- the seeds -------------------------------------------------------------------------------------------


def test_seeds_parse_into_records_with_every_field() -> None:
    catalog = load_catalog([SEEDS_FILE])
    assert catalog.errors == []
    assert catalog.duplicates == []
    assert set(ids(catalog)) == SEED_IDS
    record = next(r for r in catalog.records if r.id == AVG_POOL_ID)
    assert record.errorMessage == "Can't differentiate avg pool 2d backward."
    assert record.messagePattern == r"Can't differentiate avg pool 2d backward\."
    assert record.githubUrl == (
        "https://github.com/tracel-ai/burn/blob/d16f7ba2ed0d41408189384044cc886fb4c8f957/"
        "crates/burn-autodiff/src/ops/module.rs#L1480-L1516"
    )
    assert record.repo == "tracel-ai/burn"
    assert record.filePath == "crates/burn-autodiff/src/ops/module.rs"
    assert record.lineNumber == 1498
    assert (record.sourceCodeStart, record.sourceCodeEnd) == (1480, 1516)
    assert record.sourceCode is not None
    assert 'panic!("Can\'t differentiate avg pool 2d backward.");' in record.sourceCode
    assert isinstance(record.solutions, tuple)
    assert len(record.solutions) == 4
    assert record.solutions[0].startswith("Use max_pool2d instead of avg_pool2d")
    assert isinstance(record.preventionTips, tuple)
    assert len(record.preventionTips) == 3
    assert record.preventionTips[-1].startswith("Run a single training step")
    assert record.tags == ("rust", "autodiff", "unimplemented", "backward-pass")
    assert record.backgroundTag == "unimplemented-op-backward"
    assert record.handlingStrategy == "fallback"
    assert record.typeGuard is None
    assert record.tryCatchPattern is None
    assert record.errorCode is None
    assert record.httpStatus is None
    assert record.exampleFix is not None
    assert "max_pool2d" in record.exampleFix
    assert record.analyzedSha == "d16f7ba2ed0d41408189384044cc886fb4c8f957"
    assert record.schemaVersion == 2


def test_seeds_carry_their_data_set_version_and_source() -> None:
    catalog = load_catalog([SEEDS_FILE])
    assert catalog.dataset_versions == [SEED_VERSION]
    assert {entry.dataset_version for entry in catalog.entries} == {SEED_VERSION}
    assert [entry.line for entry in catalog.entries] == [1, 2, 3]
    assert {entry.source for entry in catalog.entries} == {str(SEEDS_FILE)}
    assert [(f.source, f.records, f.errors) for f in catalog.files] == [(str(SEEDS_FILE), 3, 0)]


# The fields that locate the site a seed is about: the review (tests/bot/test_reviewed_seeds.py) kept them.
SITE_FIELDS = (
    "id", "repo", "slug", "errorCode", "errorMessage", "messagePattern", "errorType", "errorClass",
    "httpStatus", "severity", "filePath", "lineNumber", "sourceCode", "sourceCodeStart", "sourceCodeEnd",
    "githubUrl", "analyzedSha", "schemaVersion",
)  # fmt: skip
REWRITTEN = (
    "documentation", "triggerScenarios", "commonSituations", "solutions", "exampleFix", "preventionTips",
)  # fmt: skip
REVIEWED_AT = "2026-12-04T00:00:00.000Z"


def test_the_embedded_data_holds_the_seeds_records_with_their_analyses_rewritten() -> None:
    """The embedded default holds the upstream seeds' records, in their order and under the data set version
    of their review, each at the same site (id, message, pattern, file, line, source, link), with its analysis
    rewritten after review; the seeds themselves stay as shipped in tests/fixtures/seeds.jsonl."""
    seeds = load_catalog([SEEDS_FILE])
    embedded = default_catalog()
    assert embedded.errors == []
    by_id = {entry.record.id: entry for entry in embedded.entries}
    ours = [by_id[entry.record.id] for entry in seeds.entries]
    assert [entry.line for entry in ours] == [entry.line for entry in seeds.entries]
    for seed, entry in zip(seeds.entries, ours, strict=True):
        record = entry.record
        assert entry.source == DEFAULT_CATALOG_NAME
        assert (
            entry.dataset_version == REVIEWED_VERSION
        )  # as new as the reviewed analysis (lint: version-stale)
        for field in SITE_FIELDS:
            assert getattr(record, field) == getattr(seed.record, field), (record.id, field)
        for field in REWRITTEN:
            assert getattr(record, field) != getattr(seed.record, field), (record.id, field)
        assert (record.analyzedAt, record.contentChangedAt) == (REVIEWED_AT, REVIEWED_AT)
        assert record.has_analysis and len(record.solutions) >= 2 and record.preventionTips and record.tags
        assert "// before" in (record.exampleFix or "") and "// after" in (record.exampleFix or "")
        # Nothing checked to offer for these: no validation code, type guard or catch_unwind pattern.
        assert (record.validationCode, record.typeGuard, record.tryCatchPattern) == (None, None, None)


def test_has_analysis_true_for_seeds_false_for_a_bare_baseline_record() -> None:
    assert all(record.has_analysis for record in load_catalog([SEEDS_FILE]).records)
    baseline = Record.model_validate(
        rec("fb80024af605b1bf", "Node {node_id:?} is not in the backward_states. ", solutions=[])
    )
    assert not baseline.has_analysis
    assert Record.model_validate(rec("a", documentation="It means this.")).has_analysis
    assert Record.model_validate(rec("b", solutions=["Do that."])).has_analysis


def test_record_is_frozen() -> None:
    record = Record.model_validate(rec("a"))
    with pytest.raises(ValidationError):
        record.errorMessage = "changed"  # type: ignore[misc]


# --- tolerated shapes ------------------------------------------------------------------------------------


def test_unknown_extra_fields_are_kept_not_refused() -> None:
    text = line(rec("a", futureField={"nested": [1, 2]}, anotherOne="x")) + "\n"
    catalog = parse_catalog_text(text, "extra.jsonl")
    assert catalog.errors == []
    record = catalog.records[0]
    assert record.model_extra == {"futureField": {"nested": [1, 2]}, "anotherOne": "x"}


def test_a_bare_record_object_per_line_is_accepted() -> None:
    text = json.dumps(rec("a", "first")) + "\n" + json.dumps(rec("b", "second")) + "\n"
    catalog = parse_catalog_text(text, "bare.jsonl")
    assert catalog.errors == []
    assert ids(catalog) == ["a", "b"]
    assert [entry.dataset_version for entry in catalog.entries] == [None, None]
    assert catalog.dataset_versions == []


def test_solutions_null_becomes_an_empty_tuple() -> None:
    text = line(rec("a", solutions=None, preventionTips=None, tags=None)) + "\n"
    catalog = parse_catalog_text(text, "null.jsonl")
    assert catalog.errors == []
    record = catalog.records[0]
    assert record.solutions == ()
    assert record.preventionTips == ()
    assert record.tags == ()


def test_blank_lines_are_skipped_and_line_numbers_still_count_them() -> None:
    text = "\n" + line(rec("a")) + "\n   \n" + line(rec("b")) + "\n\n"
    catalog = parse_catalog_text(text, "blank.jsonl")
    assert catalog.errors == []
    assert [(entry.record.id, entry.line) for entry in catalog.entries] == [("a", 2), ("b", 4)]


# --- bad lines -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad_line", "reason_words"),
    [
        pytest.param('{"record": {"id": "x", "errorMessage": ', ["not JSON"], id="not-json"),
        pytest.param(line({"id": "x"}), ["missing", "errorMessage"], id="no-errorMessage"),
        pytest.param(line({"id": "x", "errorMessage": ""}), ["missing", "errorMessage"], id="empty-message"),
        pytest.param(line({"errorMessage": "boom"}), ["missing", "'id'"], id="no-id"),
        pytest.param("[1, 2, 3]", ["expected a JSON object", "list"], id="array-line"),
        pytest.param('"just a string"', ["expected a JSON object", "str"], id="string-line"),
        pytest.param('{"record": 7}', ["'record' is not a JSON object"], id="record-not-object"),
        pytest.param(line(rec("x", schemaVersion=3)), ["schemaVersion", "3"], id="schema-3"),
        pytest.param(line(rec("x", lineNumber="nine")), ["lineNumber"], id="bad-field-type"),
    ],
)
def test_a_bad_line_is_an_error_with_file_line_and_reason_and_good_lines_are_kept(
    bad_line: str, reason_words: list[str]
) -> None:
    text = "\n".join([line(rec("before")), bad_line, line(rec("after"))]) + "\n"
    catalog = parse_catalog_text(text, "cat.jsonl")
    assert ids(catalog) == ["before", "after"]
    assert [entry.line for entry in catalog.entries] == [1, 3]
    assert problems(catalog) == [("cat.jsonl", 2)]
    reason = catalog.errors[0].reason
    for word in reason_words:
        assert word in reason, reason
    assert str(catalog.errors[0]).startswith("cat.jsonl:2: ")
    assert [(f.source, f.records, f.errors) for f in catalog.files] == [("cat.jsonl", 2, 1)]


def test_not_json_reason_says_where() -> None:
    catalog = parse_catalog_text("{oops}\n", "cat.jsonl")
    assert catalog.errors[0].reason.startswith("not JSON (")
    assert "column 2" in catalog.errors[0].reason


def test_unknown_schema_version_reason_names_the_versions() -> None:
    catalog = parse_catalog_text(line(rec("x", schemaVersion=3)) + "\n", "cat.jsonl")
    assert catalog.entries == []
    assert catalog.errors[0].reason == "schemaVersion: unknown schemaVersion 3 (this panicbot reads 2)"


def test_missing_both_required_fields_names_both() -> None:
    catalog = parse_catalog_text(line({"repo": "tracel-ai/burn"}) + "\n", "cat.jsonl")
    assert catalog.errors[0].reason == "missing required field 'id' and 'errorMessage'"


def test_several_bad_lines_each_get_their_own_line_number() -> None:
    text = "\n".join(["nope", line(rec("a")), line({"id": "b"}), "", "42", line(rec("c"))]) + "\n"
    catalog = parse_catalog_text(text, "many.jsonl")
    assert ids(catalog) == ["a", "c"]
    assert problems(catalog) == [("many.jsonl", 1), ("many.jsonl", 3), ("many.jsonl", 5)]


def test_a_line_separator_character_inside_a_json_string_does_not_split_the_record() -> None:
    doc = "first part\u2028second part\u0085third"
    text = json.dumps(rec("a", documentation=doc), ensure_ascii=False) + "\n" + line(rec("b")) + "\n"
    catalog = parse_catalog_text(text, "sep.jsonl")
    assert catalog.errors == []
    assert ids(catalog) == ["a", "b"]
    assert [entry.line for entry in catalog.entries] == [1, 2]
    assert catalog.records[0].documentation == doc


# --- duplicates ------------------------------------------------------------------------------------------


def test_duplicate_id_later_wins_and_is_reported() -> None:
    text = "\n".join([line(rec("a", "old")), line(rec("b")), line(rec("a", "new"), version="v2")]) + "\n"
    catalog = parse_catalog_text(text, "dup.jsonl")
    assert catalog.errors == []
    assert ids(catalog) == ["a", "b"]
    winner = catalog.entries[0]
    assert (winner.record.errorMessage, winner.line, winner.dataset_version) == ("new", 3, "v2")
    assert len(catalog.duplicates) == 1
    duplicate = catalog.duplicates[0]
    assert (duplicate.source, duplicate.line) == ("dup.jsonl", 3)
    assert "duplicate id a" in duplicate.reason
    assert "dup.jsonl:1" in duplicate.reason


def test_duplicate_across_files_names_the_earlier_file(tmp_path: Path) -> None:
    first = tmp_path / "a.jsonl"
    second = tmp_path / "b.jsonl"
    first.write_text(line(rec("same", "from a")) + "\n", encoding="utf-8")
    second.write_text(line(rec("other")) + "\n" + line(rec("same", "from b")) + "\n", encoding="utf-8")
    catalog = load_catalog([first, second])
    assert ids(catalog) == ["same", "other"]
    assert catalog.records[0].errorMessage == "from b"
    assert [(d.source, d.line) for d in catalog.duplicates] == [(str(second), 2)]
    assert f"{first}:1" in catalog.duplicates[0].reason


# --- other document shapes -------------------------------------------------------------------------------


def test_a_json_file_holding_an_array() -> None:
    text = json.dumps([{"record": rec("a"), "datasetVersion": "v9"}, rec("b"), {"id": "c"}, 5], indent=2)
    catalog = parse_catalog_text(text, "array.json")
    assert ids(catalog) == ["a", "b"]
    assert [entry.dataset_version for entry in catalog.entries] == ["v9", None]
    # Items of an array are numbered by their position in it.
    assert problems(catalog) == [("array.json", 3), ("array.json", 4)]
    assert "errorMessage" in catalog.errors[0].reason


def test_a_pretty_printed_single_json_object() -> None:
    text = json.dumps({"record": rec("a", tags=["x", "y"]), "datasetVersion": "v3"}, indent=4) + "\n"
    assert text.count("\n") > 5
    catalog = parse_catalog_text(text, "one.json")
    assert catalog.errors == []
    assert ids(catalog) == ["a"]
    assert catalog.entries[0].dataset_version == "v3"
    assert catalog.records[0].tags == ("x", "y")


def test_a_broken_pretty_printed_object_is_reported_not_raised() -> None:
    text = json.dumps(rec("a"), indent=4)[:-2] + "\n"
    catalog = parse_catalog_text(text, "broken.json")
    assert catalog.entries == []
    assert catalog.errors
    assert all(problem.source == "broken.json" and problem.line >= 1 for problem in catalog.errors)


def test_parse_catalog_text_adds_to_an_existing_catalog() -> None:
    catalog = parse_catalog_text(line(rec("a")) + "\n", "one.jsonl")
    same = parse_catalog_text(line(rec("b")) + "\n", "two.jsonl", catalog)
    assert same is catalog
    assert ids(catalog) == ["a", "b"]
    assert [f.source for f in catalog.files] == ["one.jsonl", "two.jsonl"]


# --- files and folders -----------------------------------------------------------------------------------


def test_a_folder_of_catalog_files(tmp_path: Path) -> None:
    (tmp_path / "b.jsonl").write_text(line(rec("b")) + "\n", encoding="utf-8")
    (tmp_path / "a.json").write_text(json.dumps([rec("a")]), encoding="utf-8")
    nested = tmp_path / "more"
    nested.mkdir()
    (nested / "c.ndjson").write_text(line(rec("c")) + "\nnot json\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("not a catalog {", encoding="utf-8")
    catalog = load_catalog([tmp_path])
    assert ids(catalog) == ["a", "b", "c"]
    assert [Path(f.source).name for f in catalog.files] == ["a.json", "b.jsonl", "c.ndjson"]
    assert problems(catalog) == [(str(nested / "c.ndjson"), 2)]


def test_a_folder_without_catalog_files_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "readme.md").write_text("hello", encoding="utf-8")
    catalog = load_catalog([tmp_path])
    assert catalog.entries == []
    assert problems(catalog) == [(str(tmp_path), 0)]
    assert "no .jsonl/.json catalog file" in catalog.errors[0].reason


def test_a_missing_path_is_an_error_not_an_exception(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(line(rec("a")) + "\n", encoding="utf-8")
    missing = tmp_path / "nope.jsonl"
    catalog = load_catalog([missing, good])
    assert ids(catalog) == ["a"]
    assert problems(catalog) == [(str(missing), 0)]
    assert catalog.errors[0].reason == "no such file or folder"
    assert [(f.source, f.records, f.errors) for f in catalog.files] == [
        (str(missing), 0, 1),
        (str(good), 1, 0),
    ]


def test_invalid_utf8_is_reported_and_the_rest_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "bytes.jsonl"
    bad = b'{"id": "bad", "errorMessage": "caf\xe9 \xff broke"}'
    path.write_bytes(line(rec("a")).encode() + b"\n" + bad + b"\n" + line(rec("c")).encode() + b"\n")
    catalog = load_catalog([path])
    assert ids(catalog) == ["a", "bad", "c"]
    assert problems(catalog) == [(str(path), 2)]
    assert "invalid UTF-8" in catalog.errors[0].reason
    assert "\ufffd" in catalog.records[1].errorMessage


def test_a_utf8_bom_is_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + line(rec("a")).encode() + b"\n")
    catalog = load_catalog([path])
    assert catalog.errors == []
    assert ids(catalog) == ["a"]


def test_invalid_utf8_after_a_bom_reports_the_right_line(tmp_path: Path) -> None:
    path = tmp_path / "bom-bytes.jsonl"
    data = line(rec("a")).encode() + b"\n\xff\n" + line(rec("c")).encode() + b"\n"
    path.write_bytes(b"\xef\xbb\xbf" + data)
    catalog = load_catalog([path])
    assert ids(catalog) == ["a", "c"]
    utf8 = [(p.source, p.line) for p in catalog.errors if "invalid UTF-8" in p.reason]
    assert utf8 == [(str(path), 2)]


def test_a_configmap_mount_is_read_once(tmp_path: Path) -> None:
    """Kubernetes mounts a ConfigMap as `..<timestamp>/file` plus a `file` symlink: one catalog, not two."""
    from bot.records import load_catalog

    line = '{"record": {"id": "a", "errorMessage": "boom"}}\n'
    hidden = tmp_path / "..2024_01_01_00_00_00.123" / "catalog.jsonl"
    hidden.parent.mkdir()
    hidden.write_text(line, encoding="utf-8")
    (tmp_path / "catalog.jsonl").symlink_to(hidden)
    catalog = load_catalog([tmp_path])
    assert [e.record.id for e in catalog.entries] == ["a"]
    assert catalog.duplicates == []


@given(st.text(alphabet="ab\n\r \u2028{}", max_size=60))
def test_catalog_lines_are_numbered_as_a_split_numbers_them(text: str) -> None:
    from bot.records import _numbered_lines

    assert list(_numbered_lines(text)) == list(enumerate(text.split("\n"), start=1))


def test_the_embedded_analyses_hold_one_line_per_record() -> None:
    """analyses.jsonl merges as a union of lines (.gitattributes): an edited line merged with its old self
    would leave two analyses of one record, the later silently winning."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bot" / "data" / "analyses.jsonl"
    ids = [json.loads(line)["record"]["id"] for line in path.read_text().splitlines() if line.strip()]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
