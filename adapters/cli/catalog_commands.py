"""`panicbot catalog validate|stats|lint`: what is wrong in a catalog, and what is in it."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict

from rich.console import Console
from rich.table import Table

from adapters.cli.progress import stderr_progress
from bot.api_table import load_api_table
from bot.families import FamilyError, families_files, load_families
from bot.lint import ERROR, Finding, lint_catalog
from bot.patterns import is_valid_pattern
from bot.records import DEFAULT_CATALOG_WORD, Catalog, CatalogProblem, load_catalog


def pattern_problems(catalog: Catalog) -> list[CatalogProblem]:
    """Records whose messagePattern RE2 refuses (the matcher then matches its literal text)."""
    problems = []
    for entry in catalog.entries:
        pattern = entry.record.messagePattern
        reason = is_valid_pattern(pattern) if pattern else None
        if reason:
            problems.append(CatalogProblem(entry.source, entry.line, f"invalid messagePattern: {reason}"))
    return problems


def run_validate(paths: Sequence[str], console: Console) -> int:
    catalog = load_catalog(paths)
    bad_patterns = pattern_problems(catalog)
    table = Table(title="Catalog files", title_justify="left")
    table.add_column("file")
    table.add_column("records", justify="right")
    table.add_column("bad lines", justify="right")
    for summary in catalog.files:
        table.add_row(summary.source, str(summary.records), str(summary.errors))
    console.print(table)
    for problem in [*catalog.errors, *bad_patterns]:
        console.print(f"error: {problem}", markup=False, highlight=False, soft_wrap=True)
    for problem in catalog.duplicates:
        console.print(f"warning: {problem}", markup=False, highlight=False, soft_wrap=True)
    bad = len(catalog.errors) + len(bad_patterns)
    console.print(
        f"{len(catalog.entries)} records, {bad} bad, {len(catalog.duplicates)} duplicate ids", markup=False
    )
    return 1 if bad else 0


def _count_table(title: str, counts: Counter[str]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(title.rsplit(maxsplit=1)[-1])
    table.add_column("records", justify="right")
    for key, count in counts.most_common():
        table.add_row(key, str(count))
    return table


def run_stats(paths: Sequence[str], console: Console) -> int:
    """Counts per repo, errorType and backgroundTag, shared messages, and (for a catalog with a release side
    table, such as the embedded one: no path, or `default`) records and sites per repository and release."""
    catalog = load_catalog(paths or [DEFAULT_CATALOG_WORD])
    for problem in catalog.errors:
        console.print(f"error: {problem}", markup=False, highlight=False, soft_wrap=True)
    records = catalog.records
    console.print(
        f"{len(records)} records in {len(catalog.files)} file(s); "
        f"data set versions: {', '.join(catalog.dataset_versions) or 'none'}",
        markup=False,
    )
    console.print(_count_table("Records per repo", Counter(r.repo or "(none)" for r in records)))
    console.print(_count_table("Records per errorType", Counter(r.errorType or "(none)" for r in records)))
    console.print(
        _count_table("Records per backgroundTag", Counter(r.backgroundTag or "(none)" for r in records))
    )
    missing = [r for r in records if not r.has_analysis]
    console.print(
        f"Records without analysis (no documentation and no solutions): {len(missing)}", markup=False
    )
    sites: dict[str, set[str]] = defaultdict(set)
    for record in records:
        sites[record.errorMessage].add(f"{record.filePath}:{record.lineNumber}")
    shared = {message: where for message, where in sites.items() if len(where) > 1}
    console.print(
        f"Messages shared by several sites: {len(shared)} ({sum(len(w) for w in shared.values())} records)",
        markup=False,
    )
    for message, where in sorted(shared.items(), key=lambda item: -len(item[1]))[:15]:
        console.print(f"  {len(where):3d}  {message}", markup=False, highlight=False)
    if catalog.releases:
        console.print(_release_tables(catalog))
    return 1 if catalog.errors else 0


def _release_tables(catalog: Catalog) -> Table:
    """Records and sites per repository, and per harvested release: what each release can answer."""
    table = Table(title="Records and sites per repository and release", title_justify="left")
    for column in ("repo", "release", "commit", "date", "records", "sites"):
        table.add_column(column, justify="right" if column in ("records", "sites") else "left")
    releases = catalog.releases
    present = {entry.record.id for entry in catalog.entries}
    per_release: Counter[tuple[str, str]] = Counter()
    per_repo_records: Counter[str] = Counter()
    per_repo_sites: Counter[str] = Counter()
    for record_id, sites in releases.sites.items():
        if record_id not in present or not sites:
            continue
        per_repo_records[sites[0].release.repo] += 1
        for site in sites:
            per_release[(site.release.repo, site.release.ref)] += 1
            per_repo_sites[site.release.repo] += 1
    for repo in sorted(releases.releases):
        table.add_row(
            repo, "(all)", "", "", str(per_repo_records[repo]), str(per_repo_sites[repo]), end_section=False
        )
        for release in releases.releases[repo]:
            table.add_row(
                "",
                release.name,
                release.sha[:10],
                release.date[:10],
                str(per_release[(repo, release.ref)]),
                "",
            )
    return table


def run_lint(paths: Sequence[str], console: Console, *, as_json: bool) -> int:
    """Every finding with its severity; exit 1 when any is an error (so CI can gate a data set)."""
    with stderr_progress() as progress:
        task = progress.add_task("lint", total=2)
        paths = list(paths) or [DEFAULT_CATALOG_WORD]
        catalog = load_catalog(paths)
        progress.advance(task)
        api = load_api_table(paths)
        problems = [Finding("", p.source, p.line, ERROR, "unreadable", p.reason) for p in catalog.errors]
        # The families are checked with the catalog they are written for: the embedded one, or one with
        # an `X.families.toml` beside it.
        families = None
        if DEFAULT_CATALOG_WORD in paths or families_files(paths):
            try:
                families = load_families(paths)
            except FamilyError as exc:
                problems.append(Finding("", "", 0, ERROR, "families-unreadable", str(exc)))
        problems += lint_catalog(catalog, api, families)
        progress.advance(task)
    errors = sum(1 for finding in problems if finding.severity == ERROR)
    if as_json:
        payload = {
            "records": len(catalog.entries),
            "errors": errors,
            "warnings": len(problems) - errors,
            "findings": [asdict(finding) for finding in problems],
        }
        console.print_json(json.dumps(payload))
        return 1 if errors else 0
    # One finding a line, compiler style, so editors and grep can take them.
    for finding in problems:
        where = f"{finding.source}:{finding.line}"
        record = f" [{finding.record_id}]" if finding.record_id else ""
        console.print(
            f"{where}: {finding.severity}: {finding.check}{record}: {finding.reason}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    console.print(
        f"{len(catalog.entries)} records: {errors} errors, {len(problems) - errors} warnings", markup=False
    )
    return 1 if errors else 0
