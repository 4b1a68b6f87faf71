"""The ecosystem catalog: harvested sites of many releases folded into one record per (repo, file, message),
with a side table of the releases that have each site and a row per release."""

from __future__ import annotations

import json
import random
from typing import Any

from bot.ecosystem import EcosystemCatalog, ReleaseHarvest, Source, build_ecosystem, dumps_line
from bot.harvest import HarvestedSite, github_url, record_id
from bot.records import Record

REPO = "acme/widgets"
OTHER = "acme/gadgets"
VERSION = "2025-01-01T00:00:00.000Z"
CORE = "crates/widgets-core/src/lib.rs"
BUF = "crates/widgets-core/src/buf.rs"
BUFFER = "crates/widgets-core/src/buffer.rs"
SHAPE = "crates/widgets-core/src/shape.rs"
CLI = "crates/widgets-cli/src/main.rs"

V1 = Source(REPO, "v0.1.0", "1" * 40, "2024-01-01T00:00:00Z", ("crates",))
V2 = Source(REPO, "v0.2.0", "2" * 40, "2024-06-01T00:00:00Z", ("crates",))
V3 = Source(REPO, "v0.3.0", "3" * 40, "2025-01-01T00:00:00Z", ("crates",))
G1 = Source(OTHER, "c" * 40, "c" * 40, "2023-01-01T00:00:00Z")

OUT_OF_RANGE = "index {} out of range for length {}"
TOO_SMALL = "buffer too small"
OLD_SHAPE = "Tensor shape mismatch"
NEW_SHAPE = "Tensor shapes do not match: {:?} vs {:?}"
NO_DEVICE = "no device found"


def site(
    source: Source,
    path: str,
    message: str,
    line: int,
    kind: str = "panic",
    function: str | None = "run",
    **extra: Any,
) -> HarvestedSite:
    return HarvestedSite(source.repo, "", path, kind, message, line, 9, function, **extra)


def crates(version: str) -> dict[str, tuple[str, str]]:
    core = ("widgets-core", version)
    return {CORE: core, BUF: core, BUFFER: core, SHAPE: core, CLI: ("widgets-cli", version)}


def harvests() -> list[ReleaseHarvest]:
    return [
        ReleaseHarvest(
            V1,
            [
                site(V1, CORE, OUT_OF_RANGE, 10, impl_type="Grid", condition="index >= len"),
                site(V1, BUF, TOO_SMALL, 5, function="grow"),
                site(V1, SHAPE, OLD_SHAPE, 30, kind="assert"),
                site(V1, CLI, NO_DEVICE, 7, kind="expect", function="main"),
            ],
            crates("0.1.0"),
        ),
        ReleaseHarvest(
            V2,
            [
                site(V2, CORE, OUT_OF_RANGE, 10, impl_type="Grid", condition="index >= len"),
                site(V2, BUF, TOO_SMALL, 5, function="grow"),
                site(V2, SHAPE, OLD_SHAPE, 32, kind="assert"),
                site(V2, CLI, NO_DEVICE, 7, kind="expect", function="main"),
                site(V2, CLI, NO_DEVICE, 40, kind="expect", function="main"),
            ],
            crates("0.2.0"),
        ),
        ReleaseHarvest(
            V3,
            [
                site(V3, CORE, OUT_OF_RANGE, 14, impl_type="Grid", condition="index >= len"),
                site(V3, BUFFER, TOO_SMALL, 5, function="grow"),
                site(V3, SHAPE, NEW_SHAPE, 32, kind="assert"),
                site(V3, CLI, NO_DEVICE, 7, kind="expect", function="main"),
                site(V3, CLI, NO_DEVICE, 40, kind="expect", function="main"),
            ],
            crates("0.3.0"),
        ),
        ReleaseHarvest(
            G1, [site(G1, "./src/lib.rs", "gadget broke", 3)], {"src/lib.rs": ("gadgets", "1.0.0")}
        ),
    ]


def build() -> EcosystemCatalog:
    return build_ecosystem(harvests(), VERSION)


def record_of(catalog: EcosystemCatalog, repo: str, path: str, message: str) -> Record:
    found = [r for r in catalog.records if (r.repo, r.filePath, r.errorMessage) == (repo, path, message)]
    assert len(found) == 1, found
    return found[0]


def row_of(catalog: EcosystemCatalog, record: Record) -> dict[str, Any]:
    found = [row for row in catalog.sites if row["id"] == record.id]
    assert len(found) == 1
    return found[0]


def test_one_record_per_repo_file_and_message() -> None:
    catalog = build()
    keys = [(r.repo, r.filePath, r.errorMessage) for r in catalog.records]
    assert len(keys) == len(set(keys))
    assert sorted(keys) == sorted(
        [
            (REPO, CORE, OUT_OF_RANGE),
            (REPO, BUF, TOO_SMALL),
            (REPO, BUFFER, TOO_SMALL),
            (REPO, SHAPE, OLD_SHAPE),
            (REPO, SHAPE, NEW_SHAPE),
            (REPO, CLI, NO_DEVICE),
            (OTHER, "src/lib.rs", "gadget broke"),
        ]
    )
    assert [row["id"] for row in catalog.sites] == [r.id for r in catalog.records]
    for record in catalog.records:
        assert record.id == record_id(record.repo or "", record.filePath or "", record.errorMessage)


def test_the_newest_release_gives_the_line_and_the_link_at_its_tag() -> None:
    record = record_of(build(), REPO, CORE, OUT_OF_RANGE)
    assert record.lineNumber == 14
    assert record.githubUrl == github_url(REPO, "v0.3.0", CORE, 14)
    assert record.githubUrl == f"https://github.com/{REPO}/blob/v0.3.0/{CORE}#L14"
    assert record.analyzedSha == V3.sha
    assert (record.analyzedAt, record.contentChangedAt) == (VERSION, VERSION)
    assert record.errorType == "panic"
    assert record.backgroundTag == "explicit-panic"
    assert record.messagePattern == r"index (.+?) out of range for length (.+?)"
    assert not record.has_analysis
    assert "widgets-core" in record.tags


def test_a_release_without_a_tag_links_its_commit_and_paths_are_normalised() -> None:
    record = record_of(build(), OTHER, "src/lib.rs", "gadget broke")
    assert record.githubUrl == f"https://github.com/{OTHER}/blob/{'c' * 40}/src/lib.rs#L3"


def test_a_message_that_moved_file_is_two_records() -> None:
    catalog = build()
    old = record_of(catalog, REPO, BUF, TOO_SMALL)
    new = record_of(catalog, REPO, BUFFER, TOO_SMALL)
    assert old.id != new.id
    # the old file's record stops at the last release that had it
    assert old.githubUrl == github_url(REPO, "v0.2.0", BUF, 5)
    assert [g["refs"] for g in row_of(catalog, old)["releases"]] == [["v0.1.0", "v0.2.0"]]
    assert [g["refs"] for g in row_of(catalog, new)["releases"]] == [["v0.3.0"]]


def test_a_reworded_message_is_two_records() -> None:
    catalog = build()
    old = record_of(catalog, REPO, SHAPE, OLD_SHAPE)
    new = record_of(catalog, REPO, SHAPE, NEW_SHAPE)
    assert old.id != new.id
    assert (old.lineNumber, old.analyzedSha) == (32, V2.sha)
    assert old.messagePattern == r"Tensor shape mismatch"
    assert new.messagePattern == r"Tensor shapes do not match: (.+?) vs (.+?)"
    assert [g["refs"] for g in row_of(catalog, new)["releases"]] == [["v0.3.0"]]


def test_identical_sites_share_a_group_and_a_moved_line_starts_another() -> None:
    catalog = build()
    row = row_of(catalog, record_of(catalog, REPO, CORE, OUT_OF_RANGE))
    assert row["repo"] == REPO and row["filePath"] == CORE
    fact = {"column": 9, "kind": "panic", "function": "run", "impl": "Grid", "condition": "index >= len"}
    assert row["releases"] == [
        {"refs": ["v0.1.0", "v0.2.0"], "crate": "widgets-core", "sites": [{"line": 10, **fact}]},
        {"refs": ["v0.3.0"], "crate": "widgets-core", "sites": [{"line": 14, **fact}]},
    ]


def test_a_line_that_moves_and_comes_back_rejoins_its_group() -> None:
    catalog = build()
    row = row_of(catalog, record_of(catalog, REPO, SHAPE, OLD_SHAPE))
    assert [(g["refs"], g["sites"][0]["line"]) for g in row["releases"]] == [
        (["v0.1.0"], 30),
        (["v0.2.0"], 32),
    ]
    moved_back = [
        *harvests()[:2],
        ReleaseHarvest(V3, [site(V3, SHAPE, OLD_SHAPE, 30, kind="assert")], crates("0.3.0")),
    ]
    catalog = build_ecosystem(moved_back, VERSION)
    row = row_of(catalog, record_of(catalog, REPO, SHAPE, OLD_SHAPE))
    assert [(g["refs"], g["sites"][0]["line"]) for g in row["releases"]] == [
        (["v0.1.0", "v0.3.0"], 30),
        (["v0.2.0"], 32),
    ]


def test_every_site_of_a_message_in_a_file_is_kept_and_the_first_gives_the_line() -> None:
    catalog = build()
    record = record_of(catalog, REPO, CLI, NO_DEVICE)
    assert record.lineNumber == 7
    assert record.backgroundTag == "expect-failed"
    assert record.messagePattern == r"no device found"
    groups = row_of(catalog, record)["releases"]
    assert [(g["refs"], [s["line"] for s in g["sites"]], g["crate"]) for g in groups] == [
        (["v0.1.0"], [7], "widgets-cli"),
        (["v0.2.0", "v0.3.0"], [7, 40], "widgets-cli"),
    ]


def test_release_rows_list_each_release_with_its_crate_versions() -> None:
    assert build().releases == [
        {
            "repo": OTHER,
            "ref": "c" * 40,
            "sha": "c" * 40,
            "date": G1.date,
            "crates": {"gadgets": "1.0.0"},
        },
        *(
            {
                "repo": REPO,
                "ref": source.ref,
                "sha": source.sha,
                "date": source.date,
                "crates": {"widgets-cli": version, "widgets-core": version},
            }
            for source, version in ((V1, "0.1.0"), (V2, "0.2.0"), (V3, "0.3.0"))
        ),
    ]


def test_a_file_of_no_crate_gives_a_group_without_crate() -> None:
    lone = ReleaseHarvest(V1, [site(V1, "build.rs", "no OUT_DIR", 2)], {})
    catalog = build_ecosystem([lone], VERSION)
    assert catalog.sites[0]["releases"] == [
        {
            "refs": ["v0.1.0"],
            "crate": None,
            "sites": [{"line": 2, "column": 9, "kind": "panic", "function": "run"}],
        }
    ]
    assert catalog.releases[0]["crates"] == {}


def serialised(catalog: EcosystemCatalog) -> list[str]:
    return [
        *(dumps_line(r.model_dump(mode="json", exclude_none=True)) for r in catalog.records),
        *(dumps_line(row) for row in catalog.sites),
        *(dumps_line(row) for row in catalog.releases),
    ]


def test_the_output_does_not_depend_on_the_input_order() -> None:
    expected = serialised(build())
    rng = random.Random(7)
    for _ in range(5):
        shuffled = []
        for harvest in harvests():
            files = list(harvest.crates.items())
            rng.shuffle(files)
            shuffled.append(ReleaseHarvest(harvest.source, harvest.sites, dict(files)))
        rng.shuffle(shuffled)
        assert serialised(build_ecosystem(shuffled, VERSION)) == expected


def test_dumps_line_is_compact_and_key_sorted() -> None:
    value = {"b": 1, "a": {"z": [1, 2], "y": None}, "é": "ü"}
    text = dumps_line(value)
    assert text == '{"a":{"y":null,"z":[1,2]},"b":1,"é":"ü"}'
    assert "\n" not in dumps_line({"text": "two\nlines"})
    assert json.loads(text) == value
