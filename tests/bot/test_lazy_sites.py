"""The embedded catalog's side tables are read lazily (site rows parsed and made into sites per record on
first use, the function table gunzipped on first use): every answer must be the one the eager table gives."""

from __future__ import annotations

import gc
import json
import threading
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from bot.lookup import PanicLookup
from bot.records import (
    EMBEDDED_FILES,
    Catalog,
    decode_catalog_bytes,
    default_catalog,
    gc_paused,
    load_catalog,
    side_table_names,
)
from bot.releases import ReleaseTable, _site_row_head
from tests.bot.test_rust_runtime import EXPECTED
from tests.support.release_pastes import release_cases
from tests.support.runtime_pastes import runtime_cases


def embedded_side_texts() -> dict[str, list[str]]:
    """kind -> the texts of the embedded side tables of that kind, in load order."""
    package = resources.files("bot")
    texts: dict[str, list[str]] = {}
    for name in EMBEDDED_FILES:
        folder, _, file_name = name.rpartition("/")
        for kind, side_name in side_table_names(file_name):
            side = package.joinpath(f"{folder}/{side_name}")
            if side.is_file():
                text, problem = decode_catalog_bytes(side.read_bytes(), side_name)
                assert problem is None
                texts.setdefault(kind, []).append(text)
    return texts


def parsed_rows(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def eager_table(catalog: Catalog) -> ReleaseTable:
    """The embedded side tables read the eager way (every row parsed and made into sites now), with the
    same analysed records taking over their baseline records' sites."""
    texts = embedded_side_texts()
    table = ReleaseTable()
    for text in texts[".releases"]:
        table.add_release_rows(parsed_rows(text))
    for text in texts[".sites"]:
        table.add_site_rows(parsed_rows(text))
    for text in texts[".functions"]:
        table.add_function_text(text)
    for text in texts[".history"]:
        table.add_history_text(text)
    for covered, by in catalog.covered.items():
        table.alias(by, covered)
    return table


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return default_catalog()


@pytest.fixture(scope="module")
def eager(catalog: Catalog) -> ReleaseTable:
    return eager_table(catalog)


def test_the_embedded_catalog_loads_its_side_tables_lazily_and_without_problems() -> None:
    catalog = default_catalog()
    assert not catalog.errors
    table = catalog.releases
    assert table
    # Only the records of analysed records' sites are made at load (`alias`); the rest wait for a lookup.
    assert len(table._pending) > 5000
    assert len(table._sites) <= 2 * len(catalog.covered)
    assert all(callable(source) for source in table.function_texts)


def test_every_record_gets_the_same_sites_lazily_as_from_the_eager_table(eager: ReleaseTable) -> None:
    lazy = default_catalog()  # its own: nothing made yet
    table = lazy.releases
    ids = sorted({entry.record.id for entry in lazy.entries} | set(eager.sites) | set(lazy.covered))
    assert len(ids) > 5000
    for record_id in ids:
        assert list(table.sites_of(record_id)) == list(eager.sites_of(record_id)), record_id
        assert table.newest_site(record_id) == eager.newest_site(record_id)
        assert table.gone_since(record_id) == eager.gone_since(record_id)
    assert table.paths == eager.paths
    assert table.by_path == eager.by_path
    assert table.releases == eager.releases
    assert table.sites == eager.sites  # every record made
    assert not table._pending


def test_each_records_sites_are_its_rows_own_in_release_order() -> None:
    """Read straight off the rows, without the table's code: each (release, line, function) of the row, in
    release order, a release's sites in the row's order."""
    table = default_catalog().releases
    order = {(r.repo, r.ref): r.order for releases in table.releases.values() for r in releases}
    rows = [row for text in embedded_side_texts()[".sites"] for row in parsed_rows(text)]
    assert len(rows) > 5000
    for row in rows:
        expected = [
            (order[(row["repo"], ref)], ref, item["line"], item.get("function"), group.get("crate"))
            for group in row["releases"]
            for ref in group["refs"]
            if (row["repo"], ref) in order
            for item in group["sites"]
        ]
        expected.sort(key=lambda site: site[0])
        got = [
            (s.release.order, s.release.ref, s.line, s.function, s.crate) for s in table.sites_of(row["id"])
        ]
        assert got == expected, row["id"]


def test_the_whole_sites_mapping_matches_before_any_record_was_asked_for(eager: ReleaseTable) -> None:
    table = default_catalog().releases
    assert table.sites == eager.sites
    assert bool(table) == bool(eager)


def test_the_function_table_made_on_first_use_is_the_eager_one(catalog: Catalog, eager: ReleaseTable) -> None:
    lazy = default_catalog().releases
    assert lazy._rows is None
    assert lazy._function_rows() == eager._function_rows()
    assert lazy.function_paths() == eager.function_paths()


def test_every_embedded_site_row_is_read_off_its_start_as_json_reads_it() -> None:
    lines = [line for text in embedded_side_texts()[".sites"] for line in text.split("\n") if line.strip()]
    assert len(lines) > 5000
    for line in lines:
        row = json.loads(line)
        assert _site_row_head(line) == (row["id"], row["filePath"])


@pytest.mark.parametrize(
    "line",
    [
        '{"id":"x","filePath":"a.rs","releases":[]}',  # another key order
        '{"filePath":"a\\"b.rs","id":"x","releases":[]}',  # an escaped quote
        '{"filePath":"a\\u00e9.rs","id":"x","releases":[]}',  # an escape
        '{"filePath":"","id":"x","releases":[]}',  # no file
        '{"filePath":"a.rs","id":"x","releases":null}',  # no release groups
        '{"filePath":"a.rs","id":"x"}',
        "not json",
    ],
)
def test_a_row_not_in_the_written_form_is_left_to_the_parser(line: str) -> None:
    assert _site_row_head(line) is None


def release_rows() -> list[dict[str, Any]]:
    return [
        {"repo": "o/r", "ref": "v1.0.0", "sha": "1" * 40, "date": "2024-01-01", "crates": {"c": "1.0.0"}},
        {"repo": "o/r", "ref": "v2.0.0", "sha": "2" * 40, "date": "2025-01-01", "crates": {"c": "2.0.0"}},
    ]


def site_row(record_id: str, ref: str, line: int, path: str = "src/a.rs") -> dict[str, Any]:
    sites = [{"line": line, "column": 5, "kind": "panic", "function": "f"}]
    return {"filePath": path, "id": record_id, "releases": [{"crate": "c", "refs": [ref], "sites": sites}]}


def written(rows: list[dict[str, Any]]) -> str:
    """Rows as the ecosystem build writes them: compact, key-sorted, one a line."""
    return "".join(json.dumps(row, sort_keys=True, separators=(",", ":")) + "\n" for row in rows)


class Parser:
    """What the loader hands `add_trusted_site_text`: parses a line, noting which lines it was given."""

    def __init__(self) -> None:
        self.lines: list[int] = []

    def __call__(self, number: int, line: str) -> dict[str, Any] | None:
        self.lines.append(number)
        try:
            value = json.loads(line)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None


def test_trusted_text_rows_in_any_form_give_the_sites_of_the_eager_table() -> None:
    rows = [
        site_row("a", "v2.0.0", 20),
        site_row("b", "v1.0.0", 11),
        site_row("a", "v1.0.0", 10),
        site_row("c", "v1.0.0", 30),
        site_row("d", "v9.9.9", 40),  # a ref no release row names: no site, the record still named
        {"id": "e", "releases": site_row("e", "v1.0.0", 50)["releases"]},  # no file
        site_row("f", "v1.0.0", 60, path='dir/"quoted".rs'),
        site_row("g", "v1.0.0", 70),
    ]
    for row in rows:
        row["repo"] = "o/r"
    eager = ReleaseTable()
    eager.add_release_rows(release_rows())
    eager.add_site_rows(rows)
    lazy = ReleaseTable()
    lazy.add_release_rows(release_rows())
    lines = written(rows).split("\n")
    lines[3] = json.dumps(rows[3])  # another key order and spacing
    lines.insert(7, "not json")
    parse = Parser()
    lazy.add_trusted_site_text("\n".join(lines), parse)
    assert parse.lines == [4, 6, 7, 8]  # another form, no file, an escaped quote, not JSON
    assert set(lazy._pending) == set("abcdefg")
    assert lazy.paths == eager.paths
    assert lazy.by_path == eager.by_path  # in the file's order, whichever way a row was read
    assert bool(lazy) and bool(eager)
    for record_id in "abcdefgh":
        assert list(lazy.sites_of(record_id)) == list(eager.sites_of(record_id))
    assert [(site.release.ref, site.line) for site in lazy.sites_of("a")] == [("v1.0.0", 10), ("v2.0.0", 20)]
    assert lazy.sites == eager.sites


def test_a_table_whose_rows_name_no_known_release_is_still_a_table() -> None:
    """As before: a row with release groups names its record, even when no group's ref is known."""
    table = ReleaseTable()
    table.add_site_rows([site_row("d", "v9.9.9", 40)], lazy=True)
    assert table
    assert not table.sites_of("d")
    assert table.sites == {"d": []}


def test_a_row_added_after_its_record_was_made_joins_its_sites() -> None:
    table = ReleaseTable()
    table.add_release_rows(release_rows())
    table.add_site_rows([{**site_row("a", "v2.0.0", 20), "repo": "o/r"}], lazy=True)
    assert [site.line for site in table.sites_of("a")] == [20]
    table.add_site_rows([{**site_row("a", "v1.0.0", 10), "repo": "o/r"}], lazy=True)
    assert [site.line for site in table.sites_of("a")] == [10, 20]
    parse = Parser()
    table.add_trusted_site_text(written([{**site_row("a", "v1.0.0", 12), "repo": "o/r"}]), parse)
    assert parse.lines == [1]  # parsed now: its record's sites are made already
    assert [site.line for site in table.sites_of("a")] == [10, 12, 20]


def test_an_alias_made_lazily_is_the_covered_records_sites() -> None:
    table = ReleaseTable()
    table.add_release_rows(release_rows())
    table.add_site_rows([{**site_row("baseline", "v1.0.0", 10), "repo": "o/r"}], lazy=True)
    table.alias("analysed", "baseline")
    assert table.sites_of("analysed") is table.sites_of("baseline")
    table.add_site_rows([{**site_row("own", "v1.0.0", 5), "repo": "o/r"}], lazy=True)
    table.alias("own", "baseline")  # a record with sites of its own keeps them
    assert [site.line for site in table.sites_of("own")] == [5]


def test_records_asked_for_from_many_threads_get_their_sites(catalog: Catalog, eager: ReleaseTable) -> None:
    table = default_catalog().releases
    ids = sorted(eager.sites)[:400]
    failures: list[str] = []

    def ask() -> None:
        for record_id in ids:
            if list(table.sites_of(record_id)) != list(eager.sites_of(record_id)):
                failures.append(record_id)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


def test_lookups_on_the_lazy_catalog_answer_as_on_the_eager_table(
    catalog: Catalog, eager: ReleaseTable
) -> None:
    """Release pastes and runtime pastes (sites, release choice, functions) give the same JSON."""
    reference = default_catalog()
    reference.releases = eager
    cases = [case.text for case in release_cases(reference, seed=3, count=150)]
    cases += [case.text for case in runtime_cases(reference, EXPECTED, seed=3, count=80)]
    lazy = PanicLookup(default_catalog())  # a catalog of its own: its sites are made by these lookups
    eager_lookup = PanicLookup(reference)
    for text in cases:
        got, want = lazy.lookup(text), eager_lookup.lookup(text)
        assert lazy.answer_json(got) == eager_lookup.answer_json(want), text


# ---- gc_paused ------------------------------------------------------------------------------------------


def test_objects_made_while_collection_is_paused_skip_the_young_generations() -> None:
    frozen = gc.get_freeze_count()  # the service's tests leave their heap frozen
    gc.unfreeze()
    try:
        assert gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
            made = [[index] for index in range(50_000)]
        assert gc.isenabled()
        assert gc.get_freeze_count() == 0  # moved to the oldest generation, not left frozen
        assert gc.get_count()[0] < 1_000  # else the next young collection walks the 50,000 lists
        assert made[-1] == [49_999]
    finally:
        if frozen:
            gc.freeze()


def test_a_frozen_heap_stays_frozen() -> None:
    kept = [[index] for index in range(100)]
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_paused():
            made = [[index] for index in range(1_000)]
        assert gc.get_freeze_count() == frozen
        assert gc.isenabled()
    finally:
        if not frozen_before:
            gc.unfreeze()
    assert kept[0] == [0] and made[0] == [0]


def test_collection_stays_off_when_it_was_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


# ---- a user's catalog: read now, its problems reported as before ----------------------------------------


def test_a_users_side_table_is_read_at_load_and_a_malformed_row_reported_there(tmp_path: Path) -> None:
    rows = [{**site_row("a", "v1.0.0", 10), "repo": "o/r"}, {**site_row("b", "v1.0.0", 11), "repo": "o/r"}]
    del rows[1]["releases"][0]["sites"][0]["line"]
    (tmp_path / "x.jsonl").write_text(
        json.dumps({"id": "a", "errorMessage": "boom", "repo": "o/r", "filePath": "src/a.rs"}) + "\n"
    )
    (tmp_path / "x.releases.jsonl").write_text(written(release_rows()))
    (tmp_path / "x.sites.jsonl").write_text(written(rows))
    catalog = load_catalog([tmp_path / "x.jsonl"])
    assert [str(problem) for problem in catalog.errors] == [
        f"{tmp_path / 'x.sites.jsonl'}:0: bad side table: 'line'"
    ]
    assert not catalog.releases._pending
    assert [site.line for site in catalog.releases.sites_of("a")] == [10]  # the rows before it kept


def test_default_among_a_users_paths_is_read_lazily_and_the_users_tables_now(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text(
        json.dumps({"id": "a", "errorMessage": "boom", "repo": "o/r", "filePath": "src/a.rs"}) + "\n"
    )
    (tmp_path / "x.releases.jsonl").write_text(written(release_rows()))
    (tmp_path / "x.sites.jsonl").write_text(written([{**site_row("a", "v1.0.0", 10), "repo": "o/r"}]))
    catalog = load_catalog(["default", tmp_path / "x.jsonl"])
    assert not catalog.errors
    assert "a" in catalog.releases._sites and "a" not in catalog.releases._pending
    assert len(catalog.releases._pending) > 5000
