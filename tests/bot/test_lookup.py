"""`answer_site` on a small release table: the one line a card names (its link at that line), and the
firing condition only when it says something."""

from __future__ import annotations

from typing import Any

import pytest

from bot.lookup import answer_site
from bot.records import Record
from bot.releases import ReleaseTable

REPO = "tracel-ai/burn"
FILE = "crates/burn-flex/src/ops/module.rs"
RELEASES = [
    {
        "repo": REPO,
        "ref": "v0.21.0",
        "sha": "1" * 40,
        "date": "2025-10-01",
        "crates": {"burn-flex": "0.21.0"},
    },
    {
        "repo": REPO,
        "ref": "v0.22.0",
        "sha": "2" * 40,
        "date": "2026-01-01",
        "crates": {"burn-flex": "0.22.0"},
    },
]


def table(condition: str | None, lines: tuple[int, int] = (230, 241)) -> ReleaseTable:
    releases = ReleaseTable()
    releases.add_release_rows(RELEASES)
    site: dict[str, Any] = {"column": 22, "kind": "panic", "function": "deform_conv2d_backward"}
    if condition is not None:
        site["condition"] = condition
    releases.add_site_rows(
        [
            {
                "id": "r1",
                "repo": REPO,
                "filePath": FILE,
                "releases": [
                    {"refs": ["v0.21.0"], "crate": "burn-flex", "sites": [{**site, "line": lines[0]}]},
                    {"refs": ["v0.22.0"], "crate": "burn-flex", "sites": [{**site, "line": lines[1]}]},
                ],
            }
        ]
    )
    return releases


def record(line: int, url: str) -> Record:
    return Record(
        id="r1",
        repo=REPO,
        errorMessage="deform_conv2d_backward: unsupported dtype {:?}",
        filePath=FILE,
        lineNumber=line,
        githubUrl=url,
    )


@pytest.mark.parametrize(
    ("condition", "shown"),
    [
        ("dtype", None),
        ("_", None),
        ("  kind ", None),
        ("x.dtype() is not one of DType::F32, DType::F64", "x.dtype() is not one of DType::F32, DType::F64"),
        ("flag is true", "flag is true"),
        ("!flag", "!flag"),
        (None, None),
    ],
)
def test_a_firing_condition_that_is_a_bare_name_is_not_shown(
    condition: str | None, shown: str | None
) -> None:
    site = answer_site(
        table(condition), record(241, f"https://github.com/{REPO}/blob/v0.22.0/{FILE}#L241"), None
    )
    assert site.fires_when == shown


def test_the_records_own_link_is_kept_at_the_line_of_the_release_it_names() -> None:
    own = f"https://github.com/{REPO}/blob/{'9' * 40}/{FILE}#L225-L261"
    site = answer_site(table("x"), record(241, own), None)
    assert (site.version, site.line) == ("0.22.0", 241)
    assert site.url == own.replace("#L225-L261", "#L241")


def test_a_record_read_at_another_line_is_shown_at_the_line_of_the_release_it_names() -> None:
    # Analysed at a commit where the site is at 243: the newest release has it at 241, and says so.
    own = f"https://github.com/{REPO}/blob/{'9' * 40}/{FILE}#L225-L261"
    site = answer_site(table("x"), record(243, own), None)
    assert (site.version, site.line) == ("0.22.0", 241)
    assert site.url == f"https://github.com/{REPO}/blob/v0.22.0/{FILE}#L241"
