"""The ecosystem catalog: panic sites harvested at many releases of many repositories, folded into one record
per (repo, file, message) and a side table of the releases that have each site, at which line.

Pure: the caller reads the git objects and hands over each release's harvested sites. The output is
deterministic (sorted, no clock): rebuilding from the same sources gives the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.harvest import (
    BACKGROUND_TAGS,
    FunctionSpan,
    HarvestedSite,
    github_url,
    kind_tag,
    message_pattern,
    normalise_path,
    record_id,
    site_tags,
    slug,
)
from bot.records import Record
from bot.releases import repository_path, version_key


@dataclass(frozen=True)
class Source:
    """One harvested release: a repository at a ref (a tag, or a commit named by its sha)."""

    repo: str
    ref: str
    sha: str
    date: str  # the commit's ISO date: releases of a repo are ordered by it
    paths: tuple[str, ...] = ()  # folders harvested (empty: the whole tree)
    # What the catalog puts before this release's paths: Burn before v0.13 kept its crates at the top level
    # (`burn-tensor/src/x.rs`), filed under `crates/` as in later releases, so that a site that did not
    # change is one record over every release.
    path_prefix: str = ""

    @property
    def link_ref(self) -> str:
        """What a GitHub link names: the tag, or the commit."""
        return self.ref or self.sha

    def catalog_path(self, path: str) -> str:
        """The catalog's path of a file of this release (`burn-tensor/src/x.rs`: `crates/burn-tensor/...`)."""
        return self.path_prefix + path

    def repository_path(self, path: str) -> str:
        """The file's path in this release's tree (a link to it must name that one)."""
        return repository_path(path, self.path_prefix)


@dataclass(frozen=True)
class ReleaseHarvest:
    """Everything one release gave: its sites and the crate (name, version) of every harvested file."""

    source: Source
    sites: Sequence[HarvestedSite]
    crates: Mapping[str, tuple[str, str]]  # file path -> (crate name, crate version)
    functions: Mapping[str, Sequence[FunctionSpan]] = field(default_factory=dict)  # file path -> spans
    apis: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # file path -> `read_file_api`


@dataclass
class _Site:
    """A record's site in one release (a record has one per distinct line of its message in the file)."""

    line: int
    column: int
    kind: str
    function: str | None
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class EcosystemCatalog:
    records: list[Record]
    sites: list[dict[str, Any]]  # one row per record: its releases, grouped by identical sites
    releases: list[dict[str, Any]]  # every source with its crate versions, oldest first per repo
    functions: list[dict[str, Any]] = field(default_factory=list)  # one row per file: spans per releases


def _release_order(harvest: ReleaseHarvest) -> tuple[str, tuple[int, int, int, int, str], str, str]:
    """Per repository, releases in version order (a backport cut late is still older than the next minor);
    a commit without a tag goes by the version its crates carry, then by date."""
    source = harvest.source
    version = version_key(source.ref) if source.ref != source.sha else (-1, -1, -1, 0, "")
    if version[0] < 0:
        crates = [version_key(v) for _, v in harvest.crates.values() if v]
        version = max(crates, default=version)
    return (source.repo, version, source.date, source.ref)


def _site_extra(site: HarvestedSite) -> dict[str, str]:
    """The facts a parser may add beside the function: impl type, firing condition, `# Panics` doc."""
    extra: dict[str, str] = {}
    for name, key in (("impl_type", "impl"), ("condition", "condition"), ("panics_doc", "panicsDoc")):
        value = getattr(site, name, None)
        if isinstance(value, str) and value:
            extra[key] = value
    return extra


def build_ecosystem(harvests: Iterable[ReleaseHarvest], dataset_version: str) -> EcosystemCatalog:
    """Fold the releases' sites into records (the newest release that has a site gives its line and link)
    and the side table of all the releases that have it."""
    ordered = sorted(harvests, key=_release_order)
    # (repo, path, message) -> ref -> the sites of that message in that file, in source order
    found: dict[tuple[str, str, str], dict[str, list[_Site]]] = {}
    newest: dict[tuple[str, str, str], tuple[Source, HarvestedSite]] = {}
    crate_of_key: dict[tuple[str, str, str], dict[str, tuple[str, str]]] = {}
    release_rows: list[dict[str, Any]] = []
    for harvest in ordered:
        source = harvest.source
        crates_here: dict[str, str] = {}
        for path in sorted(harvest.crates):
            name, version = harvest.crates[path]
            crates_here[name] = version
        release_row: dict[str, Any] = {
            "repo": source.repo,
            "ref": source.ref,
            "sha": source.sha,
            "date": source.date,
            "crates": dict(sorted(crates_here.items())),
        }
        if source.path_prefix:
            release_row["pathPrefix"] = source.path_prefix
        release_rows.append(release_row)
        for site in harvest.sites:
            path = normalise_path(site.file_path)
            key = (source.repo, path, site.message)
            per_ref = found.setdefault(key, {})
            per_ref.setdefault(source.ref, []).append(
                _Site(site.line, site.column, site.kind, site.function, _site_extra(site))
            )
            if len(per_ref[source.ref]) == 1:
                # Releases come oldest first: the last release seen is the newest, its first site the line.
                newest[key] = (source, site)
            crate = harvest.crates.get(path)
            if crate is not None:
                crate_of_key.setdefault(key, {})[source.ref] = crate
    function_rows = _function_rows(ordered)
    records: list[Record] = []
    site_rows: list[dict[str, Any]] = []
    for key in sorted(found):
        repo, path, message = key
        source, site = newest[key]
        identifier = record_id(repo, path, message)
        is_format = site.is_format
        records.append(
            Record(
                id=identifier,
                repo=repo,
                slug=slug(message, is_format=is_format, fallback=kind_tag(site.kind)),
                errorMessage=message,
                messagePattern=message_pattern(message, is_format=is_format),
                errorType="panic",
                severity="error",
                filePath=path,
                lineNumber=site.line,
                githubUrl=github_url(repo, source.link_ref, source.repository_path(path), site.line),
                tags=site_tags(path, repo, site.kind),
                backgroundTag=BACKGROUND_TAGS[site.kind],
                analyzedSha=source.sha,
                analyzedAt=dataset_version,
                contentChangedAt=dataset_version,
            )
        )
        site_rows.append(_site_row(identifier, repo, path, found[key], crate_of_key.get(key, {})))
    return EcosystemCatalog(records, site_rows, release_rows, function_rows)


def _function_rows(harvests: Sequence[ReleaseHarvest]) -> list[dict[str, Any]]:
    """One row per (repo, file): its function spans `[name, impl type, first line, last line]`, grouped by
    the releases that share them (a file rarely changes between two releases)."""
    per_file: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for harvest in harvests:
        for path in sorted(harvest.functions):
            spans = [[s.name, s.impl_type, s.start_line, s.end_line] for s in harvest.functions[path]]
            fingerprint = json.dumps(spans)
            groups = per_file.setdefault((harvest.source.repo, normalise_path(path)), {})
            group = groups.setdefault(fingerprint, {"refs": [], "spans": spans})
            group["refs"].append(harvest.source.ref)
    return [
        {"repo": repo, "filePath": path, "versions": list(per_file[(repo, path)].values())}
        for repo, path in sorted(per_file)
    ]


def api_rows(harvests: Sequence[ReleaseHarvest]) -> list[dict[str, Any]]:
    """One row per (repo, file) of a crate's `src/`: its public API (`bot/api_surface.py`) and crate name,
    grouped by the releases that share them."""
    per_file: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for harvest in harvests:
        for path in sorted(harvest.apis):
            crate = harvest.crates.get(path)
            if crate is None:
                continue
            api = harvest.apis[path]
            fingerprint = json.dumps([crate[0], api], sort_keys=True)
            groups = per_file.setdefault((harvest.source.repo, normalise_path(path)), {})
            group = groups.setdefault(fingerprint, {"refs": [], "crate": crate[0], "api": api})
            group["refs"].append(harvest.source.ref)
    return [
        {"repo": repo, "filePath": path, "versions": list(per_file[(repo, path)].values())}
        for repo, path in sorted(per_file)
    ]


def _site_row(
    identifier: str,
    repo: str,
    path: str,
    per_ref: Mapping[str, list[_Site]],
    crates: Mapping[str, tuple[str, str]],
) -> dict[str, Any]:
    """One side-table row: the releases that have the record, grouped where the sites are identical (most
    sites do not move between releases, so a group usually spans many)."""
    groups: list[dict[str, Any]] = []
    by_shape: dict[str, dict[str, Any]] = {}
    for ref, sites in per_ref.items():
        shape = [
            {"line": s.line, "column": s.column, "kind": s.kind, "function": s.function, **s.extra}
            for s in sites
        ]
        crate = crates.get(ref)
        fingerprint = json.dumps([shape, crate[0] if crate else None], sort_keys=True)
        group = by_shape.get(fingerprint)
        if group is None:
            group = {"refs": [], "crate": crate[0] if crate else None, "sites": shape}
            by_shape[fingerprint] = group
            groups.append(group)
        group["refs"].append(ref)
    return {"id": identifier, "repo": repo, "filePath": path, "releases": groups}


def dumps_line(value: Any) -> str:
    """Compact, key-sorted JSON: the committed files diff and rebuild byte for byte."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
