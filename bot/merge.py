"""Analysed records over a harvested baseline: the baseline fills the sites no analysed record covers.

A site is its file and message. Lines drift between the commit that was analysed and the one harvested, so
an analysed record covers the baseline record of its file and message wherever it now is. The same message
in another file is another site.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # records.py settles its catalogs with merge_catalogs
    from bot.records import Record

_SiteKey = tuple[str, str]


@dataclass(frozen=True)
class MergeResult:
    """The merged records (analysed first, then the uncovered baseline, each in input order) and counts."""

    records: list[Record]
    analysed: int
    baseline_covered: int
    baseline_added: int
    covered_by: dict[str, str] = field(default_factory=dict)  # baseline id -> covering analysed id


def _site_key(record: Record) -> _SiteKey | None:
    if not record.filePath:
        return None  # a record that names no file cannot be told apart from the same message elsewhere
    path = record.filePath.replace("\\", "/").removeprefix("./")
    # Analysed messages are sometimes stored trimmed; a trailing space is not another site.
    return path, record.errorMessage.strip()


def _same_repo(a: Record, b: Record) -> bool:
    return a.repo is None or b.repo is None or a.repo == b.repo


def _distance(a: Record, b: Record) -> int:
    if a.lineNumber is None or b.lineNumber is None:
        return 0  # no line to compare: the file and message decide
    return abs(a.lineNumber - b.lineNumber)


def merge_catalogs(
    analysed: list[Record], baseline: list[Record], *, line_tolerance: int = 50
) -> MergeResult:
    """Every analysed record, then each baseline record no analysed record covers.

    An analysed record covers the baseline records of its file and message (same repo when both name
    one) within `line_tolerance` lines; when none is that close it covers the nearest one, so a single
    baseline site is covered however far its line drifted. Several baseline records of one file and
    message (a catalog with a record per site) far from every analysed line stay as their own records.
    A baseline record with the id of an analysed record is covered too: two records with one id would
    make the later one, the baseline, win when the catalog is loaded.
    """
    if line_tolerance < 0:
        raise ValueError("line_tolerance must be >= 0")
    by_site: dict[_SiteKey, list[int]] = defaultdict(list)
    for index, record in enumerate(baseline):
        key = _site_key(record)
        if key is not None:
            by_site[key].append(index)
    covered: dict[int, str] = {}
    for record in analysed:
        key = _site_key(record)
        candidates = [i for i in by_site.get(key, []) if _same_repo(record, baseline[i])] if key else []
        if not candidates:
            continue
        near = [i for i in candidates if _distance(record, baseline[i]) <= line_tolerance]
        if not near:
            near = [min(candidates, key=lambda i: (_distance(record, baseline[i]), i))]
        for index in near:
            covered.setdefault(index, record.id)
    analysed_ids = {record.id for record in analysed}
    for index, record in enumerate(baseline):
        if index not in covered and record.id in analysed_ids:
            covered[index] = record.id
    added = [record for index, record in enumerate(baseline) if index not in covered]
    return MergeResult(
        records=[*analysed, *added],
        analysed=len(analysed),
        baseline_covered=len(covered),
        baseline_added=len(added),
        covered_by={baseline[index].id: by for index, by in sorted(covered.items())},
    )
