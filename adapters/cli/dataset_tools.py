"""`panicbot catalog harvest|merge`: baseline records from a Rust tree, and analysed records merged over them.

The file side of `bot.harvest` and `bot.merge`: walking folders, decoding, writing JSONL, exit codes.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from adapters.cli.progress import stderr_progress
from adapters.files import write_atomically
from bot.harvest import (
    HarvestedSite,
    crate_of,
    harvest_file,
    is_skipped_path,
    normalise_path,
    sites_to_records,
)
from bot.merge import merge_catalogs
from bot.records import Catalog, Record, load_catalog

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2

# The data set's key order, so that a harvested line diffs cleanly against a published one.
RECORD_KEY_ORDER = (
    "id", "repo", "slug", "errorCode", "errorMessage", "messagePattern", "errorType", "errorClass",
    "httpStatus", "severity", "filePath", "lineNumber", "sourceCode", "sourceCodeStart", "sourceCodeEnd",
    "githubUrl", "documentation", "triggerScenarios", "commonSituations", "solutions", "exampleFix",
    "handlingStrategy", "validationCode", "typeGuard", "tryCatchPattern", "preventionTips", "tags",
    "backgroundTag", "analyzedSha", "analyzedAt", "contentChangedAt", "schemaVersion",
)  # fmt: skip
# Build output and version control never hold source worth a record, and can be huge.
SKIPPED_WALK_DIRECTORIES = frozenset({"target", "node_modules"})


def _warn(message: str) -> None:
    print(f"panicbot: {message}", file=sys.stderr)


def record_line(record: Record, dataset_version: str | None) -> str:
    """One catalog line in the data set's format: compact JSON, every field, the data set's key order."""
    fields: dict[str, Any] = record.model_dump(mode="json")
    ordered = {key: fields.pop(key) for key in RECORD_KEY_ORDER if key in fields}
    ordered.update(fields)  # extra fields an analysed record carries stay, after the known ones
    line = {"record": ordered, "datasetVersion": dataset_version}
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def rust_files(src: Path) -> Iterator[tuple[Path, str]]:
    """Every `.rs` file under `src` with its `/`-separated path relative to `src`, sorted by that path
    (the data set's order). Hidden folders, `target/` and symlinked folders are not entered."""
    found: list[tuple[str, Path]] = []

    def unreadable(error: OSError) -> None:
        _warn(f"{error.filename}: cannot list: {error.strerror}")

    for folder, subfolders, files in os.walk(src, onerror=unreadable):
        subfolders[:] = [
            name for name in subfolders if not name.startswith(".") and name not in SKIPPED_WALK_DIRECTORIES
        ]
        for name in files:
            if name.endswith(".rs"):
                path = Path(folder) / name
                found.append((path.relative_to(src).as_posix(), path))
    for relative, path in sorted(found):
        yield path, relative


def run_harvest(src: Path, repo: str, sha: str, out: TextIO, dataset_version: str) -> int:
    """Write the baseline records of every `.rs` file under `src` to `out` as JSONL; a summary per crate
    goes to stderr. Exit 0; 1 when no Rust file was found or one could not be read; 2 for bad arguments."""
    if repo.count("/") != 1 or not all(repo.split("/")):
        _warn(f"--repo must be OWNER/NAME, got {repo!r}")
        return EXIT_USAGE
    if not sha.strip() or any(ch.isspace() for ch in sha):
        _warn(f"--sha must be a commit id, got {sha!r}")
        return EXIT_USAGE
    if src.is_file():
        files = [(src, src.name)]
    elif src.is_dir():
        files = list(rust_files(src))
    else:
        _warn(f"{src}: no such file or folder")
        return EXIT_USAGE
    code = EXIT_OK
    sites: list[HarvestedSite] = []
    files_per_crate: Counter[str] = Counter()
    sites_per_crate: Counter[str] = Counter()
    skipped = 0
    harvested: list[tuple[str, list[HarvestedSite]]] = []
    test_paths: set[str] = set()
    with stderr_progress() as progress:
        task = progress.add_task("harvest", total=len(files))
        for path, relative in files:
            progress.advance(task)
            if is_skipped_path(relative):
                skipped += 1
                continue
            try:
                text = path.read_bytes().decode("utf-8", errors="replace")
            except OSError as exc:
                _warn(f"{path}: cannot read: {exc.strerror}")
                code = EXIT_PROBLEMS
                continue
            found, test_modules = harvest_file(text, relative, repo=repo, sha=sha)
            test_paths.update(test_modules)
            harvested.append((relative, found))
    for relative, found in harvested:
        normalised = normalise_path(relative)
        if normalised in test_paths or any(normalised.startswith(p) for p in test_paths if p.endswith("/")):
            skipped += 1  # a `#[cfg(test)] mod NAME;` file, or one below it
            continue
        crate = crate_of(relative, repo)
        files_per_crate[crate] += 1
        sites_per_crate[crate] += len(found)
        sites.extend(found)
    records = sites_to_records(sites, repo=repo, sha=sha, dataset_version=dataset_version)
    for record in records:
        out.write(record_line(record, dataset_version) + "\n")
    out.flush()
    records_per_crate = Counter(crate_of(record.filePath or "", repo) for record in records)
    for crate in sorted(files_per_crate):
        print(
            f"{crate}: {files_per_crate[crate]} files, {sites_per_crate[crate]} sites, "
            f"{records_per_crate[crate]} records",
            file=sys.stderr,
        )
    print(
        f"total: {sum(files_per_crate.values())} files ({skipped} test/bench/example files skipped), "
        f"{len(sites)} sites, {len(records)} records",
        file=sys.stderr,
    )
    if not files_per_crate and code == EXIT_OK:
        _warn(f"no Rust source file outside tests/, benches/ and examples/ under {src}")
        code = EXIT_PROBLEMS
    return code


def _report(catalog: Catalog, role: str) -> tuple[int, bool]:
    """Print a catalog's problems; (bad lines, whether a whole path was unusable)."""
    for problem in catalog.errors:
        print(f"error: {role}: {problem}", file=sys.stderr)
    for problem in catalog.duplicates:
        print(f"warning: {role}: {problem}", file=sys.stderr)
    unusable = any(problem.line == 0 for problem in catalog.errors)
    return len(catalog.errors), unusable


def run_merge(analysed_paths: Sequence[Path | str], baseline_path: Path | str, out_path: Path | str) -> int:
    """Merge analysed catalogs over a harvested baseline into `out_path` (written atomically).

    Exit 0; 1 when bad lines were skipped (the output is still written, without them); 2 when an input
    path is missing or unreadable or the output cannot be written (nothing is written then).
    """
    if not analysed_paths:
        _warn("merge needs at least one analysed catalog")
        return EXIT_USAGE
    with stderr_progress() as progress:
        task = progress.add_task("merge: read", total=2)
        analysed = load_catalog(list(analysed_paths))
        progress.advance(task)
        baseline = load_catalog([baseline_path])
        progress.advance(task)
    bad_analysed, unusable_analysed = _report(analysed, "analysed")
    bad_baseline, unusable_baseline = _report(baseline, "baseline")
    if unusable_analysed or unusable_baseline:
        _warn("an input could not be read: nothing written")
        return EXIT_USAGE
    result = merge_catalogs(analysed.records, baseline.records)
    analysed_versions = {entry.record.id: entry.dataset_version for entry in analysed.entries}
    baseline_versions = {entry.record.id: entry.dataset_version for entry in baseline.entries}
    lines = [
        record_line(
            record,
            analysed_versions[record.id] if index < result.analysed else baseline_versions[record.id],
        )
        for index, record in enumerate(result.records)
    ]
    out = Path(out_path)
    try:
        write_atomically(out, lines)
    except OSError as exc:
        _warn(f"{out}: cannot write: {exc.strerror or exc}")
        return EXIT_USAGE
    print(
        f"{result.analysed} analysed + {result.baseline_added} baseline records "
        f"({result.baseline_covered} baseline records covered by an analysed one) -> {out}: "
        f"{len(result.records)} records",
        file=sys.stderr,
    )
    return EXIT_PROBLEMS if bad_analysed or bad_baseline else EXIT_OK
