"""Releases: which harvested releases have a record's site and at which line, and which release a paste
reveals (cargo registry paths, git checkouts, a Cargo.lock excerpt, a `burn = "0.16"` line).

Text and rows in, answers out: the catalog loader hands over the side-table rows it read.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?(?:-([0-9A-Za-z.]+))?")
# `.../registry/src/<index>/burn-fusion-0.21.0/src/...`, `vendor/burn-core-0.16.0/src/...`
_CRATE_DIR = re.compile(
    r"(?:^|[/\\])(?P<crate>[A-Za-z][A-Za-z0-9_-]*?)-(?P<version>\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?)"
    r"(?:\+[0-9A-Za-z.]+)?[/\\]"
)
# `.cargo/git/checkouts/burn-<hash>/<short sha>/crates/...`
_CHECKOUT = re.compile(
    r"git[/\\]checkouts[/\\](?P<name>[A-Za-z0-9_-]+?)-[0-9a-f]{8,}[/\\](?P<rev>[0-9a-f]{7,40})[/\\]"
)
# A Cargo.lock entry: `name = "burn-core"` then `version = "0.16.0"`.
_LOCK_ENTRY = re.compile(
    r'name\s*=\s*"(?P<crate>[A-Za-z0-9_-]+)"[ \t\r]*\n[ \t]*version\s*=\s*"(?P<version>[^"\n]+)"'
)
# A Cargo.toml dependency: `burn = "0.16"`, `burn = { version = "0.16", features = [...] }`.
_DEPENDENCY = re.compile(
    r"^[ \t]*(?P<crate>[A-Za-z][A-Za-z0-9_-]*)[ \t]*=[ \t]*"
    r'(?:"(?P<plain>[^"\n]+)"|\{[^}\n]*?\bversion[ \t]*=[ \t]*"(?P<table>[^"\n]+)")',
    re.MULTILINE,
)
MAX_SCANNED_CHARS = 2_000_000  # version hints are read from the first part of a huge paste
CANDIDATES_KEPT = 4_096  # `ReleaseTable.candidates` answers kept (a few per distinct paste)


def version_key(text: str) -> tuple[int, int, int, int, str]:
    """Semver order; a pre-release sorts before its release (0.20.0-pre.6 < 0.20.0)."""
    match = _VERSION.search(text)
    if not match:
        return (-1, -1, -1, 0, text)
    major, minor, patch, pre = match.groups()
    # Numeric identifiers compare as numbers (pre.2 < pre.10): padded, they compare right as text.
    pre = re.sub(r"\d+", lambda digits: digits.group().zfill(10), pre or "")
    return (int(major), int(minor), int(patch or 0), 0 if pre else 1, pre)


@dataclass(frozen=True)
class VersionHint:
    """A crate version a paste reveals. `exact` for a path or lock entry; a requirement (`0.16`) is not."""

    crate: str
    version: str
    exact: bool
    source: str  # "path", "checkout", "lock", "manifest"


@dataclass(frozen=True)
class CheckoutHint:
    """A git dependency: the repository's name and the checked-out revision (short sha)."""

    name: str
    rev: str


def hint_from_path(raw_path: str) -> VersionHint | CheckoutHint | None:
    """The crate and version of a cargo registry or vendored path, or the revision of a git checkout."""
    checkout = _CHECKOUT.search(raw_path)
    if checkout:
        return CheckoutHint(checkout.group("name").lower(), checkout.group("rev").lower())
    # The last crate folder in the path is the one the file is in.
    found = None
    for found in _CRATE_DIR.finditer(raw_path):  # noqa: B007
        continue
    if found is None:
        return None
    return VersionHint(found.group("crate").lower().replace("_", "-"), found.group("version"), True, "path")


def hints_in_text(text: str) -> list[VersionHint]:
    """Versions a paste declares outside paths: Cargo.lock entries and Cargo.toml dependency lines."""
    text = text[:MAX_SCANNED_CHARS]
    hints: list[VersionHint] = []
    if "version" in text:
        for match in _LOCK_ENTRY.finditer(text):
            hints.append(VersionHint(match.group("crate").lower(), match.group("version"), True, "lock"))
    for match in _DEPENDENCY.finditer(text):
        requirement = (match.group("plain") or match.group("table") or "").strip()
        version = requirement.lstrip("=^~ ")
        crate = match.group("crate").lower()
        if crate in ("version", "name", "edition", "rust-version") or not _VERSION.fullmatch(version):
            continue
        hints.append(VersionHint(crate, version, requirement.startswith("="), "manifest"))
    return hints


# ---- The side table -----------------------------------------------------------------------------------


def repository_path(path: str, prefix: str) -> str:
    """A catalog path as a release whose paths the catalog files under `prefix` has it in its tree
    (`crates/burn-tensor/src/x.rs` is `burn-tensor/src/x.rs` in Burn before v0.13)."""
    return path.removeprefix(prefix) if prefix and path.startswith(prefix) else path


@dataclass(frozen=True)
class Release:
    """One harvested release of a repository: its ref (tag or commit), commit and crate versions."""

    repo: str
    ref: str
    sha: str
    date: str
    crates: Mapping[str, str]
    order: int  # among the repository's releases, oldest first
    # What the catalog puts before this release's paths (`crates/` for Burn before v0.13: `repository_path`).
    path_prefix: str = ""

    def repository_path(self, path: str) -> str:
        """The catalog path `path` as this release's tree has it: what a link to the file at it names."""
        return repository_path(path, self.path_prefix)

    @property
    def is_tag(self) -> bool:
        return self.ref != self.sha

    def crate_version(self, crate: str | None) -> str | None:
        return self.crates.get(crate) if crate else None

    @property
    def name(self) -> str:
        """`v0.21.0`, or a short commit."""
        return self.ref if self.is_tag else self.sha[:10]


@dataclass(frozen=True)
class Removal:
    """The commit that took a record's message out of its file, between the last release that has it and
    the next one (`X.history.jsonl`, written by the ecosystem build)."""

    last_ref: str
    gone_ref: str
    commit: str
    subject: str
    pull_request: int | None = None

    @property
    def said(self) -> str:
        """`"Fix checkpointer shutdown (#2780)" (a1b2c3d4e5)`: the commit's subject (which names its pull
        request when it has one) and short sha."""
        return f'"{self.subject}" ({self.commit})'


@dataclass(frozen=True)
class ConditionCommit:
    """The commit from which a record's firing condition reads as in release `changed_ref`, between the
    release before it that has the record (`since_ref`) and that one (`X.history.jsonl`, written by the
    ecosystem build)."""

    since_ref: str
    changed_ref: str
    commit: str
    subject: str
    pull_request: int | None = None

    @property
    def said(self) -> str:
        """`"Check the index strictly (#7)" (a1b2c3d4e5)`: the commit's subject and short sha."""
        return f'"{self.subject}" ({self.commit})'


@dataclass(frozen=True, order=True)
class FunctionRange:
    """A function's lines in one file of one release (1-based, inclusive); ordered by first line."""

    start_line: int
    end_line: int
    name: str = field(compare=False)
    impl_type: str | None = field(compare=False, default=None)

    @property
    def qualified(self) -> str:
        return f"{self.impl_type}::{self.name}" if self.impl_type else self.name


@dataclass(frozen=True)
class Site:
    """A record's site in one release."""

    release: Release
    crate: str | None
    line: int
    column: int | None
    kind: str | None
    function: str | None
    impl_type: str | None = None
    condition: str | None = None
    panics_doc: str | None = None

    @property
    def version(self) -> str | None:
        """The crate's version at this release (Burn's crates share the workspace version)."""
        return self.release.crate_version(self.crate)


@dataclass
class ReleaseTable:
    """Releases per repository and, per record, the releases that have its site."""

    releases: dict[str, list[Release]] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)  # record id -> file path (side tables say it)
    by_path: dict[str, list[str]] = field(default_factory=dict)  # file path -> record ids
    # Function tables, parsed on first use: texts, or what makes one (the embedded table is gunzipped then).
    function_texts: list[str | Callable[[], str]] = field(default_factory=list)
    _rows: dict[str, list[str]] | None = None
    _functions: dict[str, list[tuple[str, frozenset[str], list[FunctionRange]]]] = field(default_factory=dict)
    repos_by_crate: dict[str, set[str]] = field(default_factory=dict)
    # record id -> sites, oldest release first: made from the record's site rows the first time it is asked
    # for (a lookup asks for a few of the ~5,000; making them all took a third of the embedded load).
    _sites: dict[str, list[Site]] = field(default_factory=dict)
    # record id -> its rows not made into sites yet (parsed, or the raw line of a trusted table), each with
    # the releases known when it was added.
    _pending: dict[str, list[tuple[Mapping[str, Any] | str, dict[tuple[str, str], Release]]]] = field(
        default_factory=dict
    )
    # Removal tables (`X.history.jsonl`), parsed on first use as the function tables are, and the harvested
    # record whose history an analysed record that covers it takes over.
    history_texts: list[str | Callable[[], str]] = field(default_factory=list)
    _removals: dict[str, Removal] | None = None
    _condition_commits: dict[tuple[str, str], ConditionCommit] | None = None
    _history_of: dict[str, str] = field(default_factory=dict)
    # repo -> the crates its releases name, and those crates by their Cargo spelling (`serde-json`): made on
    # first use, as each lookup asks for them several times.
    _repo_crates: dict[str, tuple[frozenset[str], dict[str, str]]] = field(default_factory=dict)
    # (repo, crate, hints) -> the repository's release list it was read from and `candidates`' answer: each
    # match of a lookup asks again with the same hints. Emptied when it reaches CANDIDATES_KEPT entries.
    _candidates: dict[
        tuple[str, str | None, tuple[VersionHint | CheckoutHint, ...]],
        tuple[list[Release], tuple[Release, ...]],
    ] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self._sites) or bool(self._pending)

    @property
    def sites(self) -> dict[str, list[Site]]:
        """Record id -> its sites, oldest release first, every record's made now (`sites_of` makes one)."""
        for record_id in list(self._pending):
            self._sites_for(record_id)
        return self._sites

    def _sites_for(self, record_id: str) -> list[Site] | None:
        """The record's sites, made from its rows on first use; None for a record no site row names.
        Safe with lookups in several threads: the made list is published before its rows are dropped."""
        found = self._sites.get(record_id)
        if found is not None:
            return found
        pending = self._pending.get(record_id)
        if pending is None:
            return self._sites.get(record_id)  # made by another thread meanwhile, or never named
        made: list[Site] = []
        for row, by_ref in pending:
            _add_row_sites(made, json.loads(row) if isinstance(row, str) else row, by_ref)
        self._sites[record_id] = made
        self._pending.pop(record_id, None)
        return made

    def add_release_rows(self, rows: Iterable[Mapping[str, Any]]) -> None:
        by_repo: dict[str, list[Mapping[str, Any]]] = {}
        for row in rows:
            by_repo.setdefault(str(row["repo"]), []).append(row)
        for repo, items in by_repo.items():
            known = {release.ref: release for release in self.releases.get(repo, [])}
            for item in items:
                crates = {str(k): str(v) for k, v in dict(item.get("crates") or {}).items()}
                prefix = str(item.get("pathPrefix") or "")
                known[str(item["ref"])] = Release(
                    repo, str(item["ref"]), str(item["sha"]), str(item["date"]), crates, 0, prefix
                )
            ordered = sorted(known.values(), key=_release_order)
            self.releases[repo] = [
                dataclasses.replace(release, order=index) for index, release in enumerate(ordered)
            ]
            for release in self.releases[repo]:
                for crate in release.crates:
                    self.repos_by_crate.setdefault(crate, set()).add(repo)
            self._repo_crates.pop(repo, None)
        self._candidates = {}

    def add_site_rows(self, rows: Iterable[Mapping[str, Any]], *, lazy: bool = False) -> None:
        """Rows of the ecosystem side table (`releases` groups), or of a single-release one such as
        `burn-panics.sites.jsonl` (one site per row, no release: only the function is kept).

        `lazy` (for trusted rows, the embedded catalog's): a row's sites are made when its record is first
        asked for, against the releases known now. Otherwise they are made here, and a malformed row raises
        here (the rows before it kept)."""
        by_ref = self._by_ref()
        for row in rows:
            self._add_site_row(row, by_ref, lazy=lazy)

    def add_trusted_site_text(self, text: str, parse: Callable[[int, str], Mapping[str, Any] | None]) -> None:
        """A trusted side table's text (the embedded one, written key-sorted by `dumps_line`): a row's id and
        file are read off its start, `{"filePath":"…","id":"…","releases":[`, and the row is parsed when
        its record is first asked for. A line not in that form (another key order, an escaped character, no
        file) is parsed now by `parse` (line number, line -> the row, or None for a bad line)."""
        by_ref = self._by_ref()
        for number, line in enumerate(text.split("\n"), start=1):
            head = _site_row_head(line)
            if head is not None and head[0] not in self._sites:
                self._add_pending(head[0], head[1], line, by_ref)
            elif line.strip():
                row = parse(number, line)
                if row is not None:
                    self._add_site_row(row, by_ref, lazy=True)

    def _add_site_row(
        self, row: Mapping[str, Any], by_ref: dict[tuple[str, str], Release], *, lazy: bool
    ) -> None:
        record_id = str(row.get("id", ""))
        if not record_id:
            return
        if not isinstance(row.get("releases"), list):
            return
        path = str(row["filePath"]) if row.get("filePath") else None
        found = self._sites.get(record_id)
        if lazy and found is None:
            self._add_pending(record_id, path, row, by_ref)
            return
        self._add_path(record_id, path)
        if found is None:
            found = self._sites_for(record_id)
        if found is None:
            found = self._sites[record_id] = []
        _add_row_sites(found, row, by_ref)

    def _by_ref(self) -> dict[tuple[str, str], Release]:
        return {
            (release.repo, release.ref): release
            for releases in self.releases.values()
            for release in releases
        }

    def _add_path(self, record_id: str, path: str | None) -> None:
        if path:
            self.paths[record_id] = path
            self.by_path.setdefault(path, []).append(record_id)

    def _add_pending(
        self,
        record_id: str,
        path: str | None,
        row: Mapping[str, Any] | str,
        by_ref: dict[tuple[str, str], Release],
    ) -> None:
        self._add_path(record_id, path)
        self._pending.setdefault(record_id, []).append((row, by_ref))

    def alias(self, record_id: str, covered_id: str) -> None:
        """An analysed record that covers a harvested one takes over its releases."""
        sites = self._sites_for(covered_id)
        if sites and record_id not in self._sites and record_id not in self._pending:
            self._sites[record_id] = sites
        self._history_of.setdefault(record_id, covered_id)

    def add_history_text(self, text: str | Callable[[], str]) -> None:
        """A removal table (`X.history.jsonl`): kept as text (or what gives it), parsed when first asked."""
        self.history_texts.append(text)
        self._removals = None
        self._condition_commits = None

    def _read_history(self) -> tuple[dict[str, Removal], dict[tuple[str, str], ConditionCommit]]:
        """The history tables' rows: removals (`lastRef`, `goneRef`) by record id, and condition changes
        (`sinceRef`, `changedRef`) by record id and release ref. Parsed once."""
        if self._removals is None or self._condition_commits is None:
            removals: dict[str, Removal] = {}
            changes: dict[tuple[str, str], ConditionCommit] = {}
            for source in self.history_texts:
                text = source() if callable(source) else source
                for line in text.split("\n"):
                    try:
                        row = json.loads(line) if line.strip() else None
                        if not isinstance(row, dict):
                            continue
                        pull = row.get("pullRequest")
                        number = pull if isinstance(pull, int) else None
                        if "changedRef" in row:
                            changes[(str(row["id"]), str(row["changedRef"]))] = ConditionCommit(
                                str(row["sinceRef"]),
                                str(row["changedRef"]),
                                str(row["commit"]),
                                str(row["subject"]),
                                number,
                            )
                        else:
                            removals[str(row["id"])] = Removal(
                                str(row["lastRef"]),
                                str(row["goneRef"]),
                                str(row["commit"]),
                                str(row["subject"]),
                                number,
                            )
                    except (ValueError, KeyError, TypeError):
                        continue  # a damaged row says nothing; the rest still do
            self._removals, self._condition_commits = removals, changes
        return self._removals, self._condition_commits

    def removal(self, record_id: str) -> Removal | None:
        """The commit that took the record's message out of its file after its last release, if known."""
        removals = self._read_history()[0]
        found = removals.get(record_id)
        if found is None and record_id in self._history_of:
            found = removals.get(self._history_of[record_id])
        return found

    def condition_commit(self, record_id: str, changed_ref: str) -> ConditionCommit | None:
        """The commit from which the record's firing condition reads as in release `changed_ref`, if known."""
        changes = self._read_history()[1]
        found = changes.get((record_id, changed_ref))
        if found is None and record_id in self._history_of:
            found = changes.get((self._history_of[record_id], changed_ref))
        return found

    def records_at(self, path: str, crate: str | None = None) -> list[str]:
        """Records of a pasted repository path (`crates/wgpu-core/src/x.rs` is `wgpu-core/src/x.rs` in its
        repository; a root crate's `crates/ndarray/src/x.rs` is `src/x.rs`)."""
        return [record_id for form in _path_forms(path, crate) for record_id in self.by_path.get(form, ())]

    def add_function_text(self, text: str | Callable[[], str]) -> None:
        """A function table (`X.functions.jsonl`): kept as text, parsed the first time a line is named; or
        a function that gives the text, called then (the embedded table: 1.2 MB gunzipped on first use)."""
        self.function_texts.append(text)
        self._rows = None
        self._functions = {}

    def _function_rows(self) -> dict[str, list[str]]:
        """file path -> its raw table rows. Rows are written key-sorted, so a row starts with its
        `{"filePath":"…"`: the path is read without parsing the row (a table holds ~10,000 files)."""
        if self._rows is None:
            rows: dict[str, list[str]] = {}
            prefix = '{"filePath":"'
            for source in self.function_texts:
                text = source() if callable(source) else source
                for line in text.split("\n"):
                    if line.startswith(prefix):
                        end = line.find('"', len(prefix))
                        if end > 0:
                            rows.setdefault(line[len(prefix) : end], []).append(line)
                    elif line.strip():
                        try:  # a row written by another tool, keys in another order
                            rows.setdefault(str(json.loads(line)["filePath"]), []).append(line)
                        except (ValueError, KeyError, TypeError):
                            continue
            self._rows = rows
        return self._rows

    def _file_functions(self, path: str) -> list[tuple[str, frozenset[str], list[FunctionRange]]]:
        """(repo, the refs that share them, spans sorted by first line) per version of one file, parsed on
        first use."""
        cached = self._functions.get(path)
        if cached is not None:
            return cached
        found: list[tuple[str, frozenset[str], list[FunctionRange]]] = []
        for line in self._function_rows().get(path, ()):
            try:
                row = json.loads(line)
                for version in row["versions"]:
                    refs = frozenset(str(ref) for ref in version["refs"])
                    spans = sorted(
                        FunctionRange(int(s[2]), int(s[3]), str(s[0]), s[1]) for s in version["spans"]
                    )
                    found.append((str(row["repo"]), refs, spans))
            except (ValueError, KeyError, TypeError, IndexError):
                continue  # a bad row names no function; the rest still do
        self._functions[path] = found
        return found

    def function_paths(self) -> list[str]:
        """Every file the function tables cover."""
        return sorted(self._function_rows())

    def function_files(self, path: str, crate: str | None = None) -> list[tuple[str, str]]:
        """(repo, repository path) of the harvested files a pasted path can be (see `records_at`)."""
        found: list[tuple[str, str]] = []
        for candidate in _path_forms(path, crate):
            for repo, _, _ in self._file_functions(candidate):
                if (repo, candidate) not in found:
                    found.append((repo, candidate))
        return found

    def function_at(
        self, repo: str, path: str, releases: Sequence[Release], line: int
    ) -> FunctionRange | None:
        """The innermost function holding `line` of `path` in the first of `releases` that has the file."""
        versions = [v for v in self._file_functions(path) if v[0] == repo]
        for release in releases:
            for _, refs, spans in versions:
                if release.ref in refs:
                    holding = [span for span in spans if span.start_line <= line <= span.end_line]
                    return max(holding, key=lambda span: span.start_line) if holding else None
        return None

    def sites_of(self, record_id: str) -> Sequence[Site]:
        found = self._sites_for(record_id)
        return () if found is None else found

    def newest_site(self, record_id: str) -> Site | None:
        """The first site (in the file) of the newest release that has the record."""
        sites = self._sites_for(record_id)
        if not sites:
            return None
        # Sites are sorted by release order: the newest release's are among the last ones, those of its
        # order (the first of them in the list is the answer).
        newest = sites[-1].release
        first = len(sites) - 1
        for position in range(len(sites) - 2, -1, -1):
            release = sites[position].release
            if release.order != newest.order:
                break
            if _same_release(release, newest):
                first = position
        return sites[first]

    def gone_since(self, record_id: str) -> Release | None:
        """The first release of the repository, after the newest one with the site, that no longer has it."""
        newest = self.newest_site(record_id)
        if newest is None:
            return None
        later = self.releases.get(newest.release.repo, [])[newest.release.order + 1 :]
        return later[0] if later else None

    def resolve(
        self, repo: str, crate: str | None, hints: Sequence[VersionHint | CheckoutHint]
    ) -> Release | None:
        """The release of `repo` a paste most likely ran (see `candidates`)."""
        found = self.candidates(repo, crate, hints)
        return found[0] if found else None

    def candidates(
        self, repo: str, crate: str | None, hints: Sequence[VersionHint | CheckoutHint]
    ) -> list[Release]:
        """The releases of `repo` a paste may have run, likeliest first, from the first hint that names
        one of its crates (or the repository) and a release harvested here. Several releases can carry one
        crate version (a tag and the commits after it, before the next bump): tags first, newest first."""
        releases = self.releases.get(repo, [])
        if not releases:
            return []
        key = (repo, crate, tuple(hints))
        kept = self._candidates.get(key)
        if kept is not None and kept[0] is releases:
            return list(kept[1])
        found = self._read_candidates(repo, crate, hints, releases)
        if len(self._candidates) >= CANDIDATES_KEPT:
            self._candidates = {}  # a new dict, not cleared: a lookup in another thread may be reading it
        self._candidates[key] = (releases, tuple(found))
        return found

    def _read_candidates(
        self,
        repo: str,
        crate: str | None,
        hints: Sequence[VersionHint | CheckoutHint],
        releases: list[Release],
    ) -> list[Release]:
        repo_name = repo.rsplit("/", 1)[-1].lower()
        repo_crates, spelled = self._crate_names(repo, releases)
        for hint in hints:
            if isinstance(hint, CheckoutHint):
                if hint.name == repo_name or hint.name in repo_crates:
                    found = [r for r in reversed(releases) if r.sha.startswith(hint.rev)]
                    if found:
                        return found
                continue
            named = spelled.get(hint.crate.replace("_", "-"))
            if named is None and hint.crate == repo_name:
                named = crate if crate in repo_crates else repo_name
            if named is None:
                continue
            found = _releases_for_version(releases, named, hint)
            if found:
                return found
        return []

    def _crate_names(self, repo: str, releases: list[Release]) -> tuple[frozenset[str], dict[str, str]]:
        found = self._repo_crates.get(repo)
        if found is None:
            crates = frozenset(crate for release in releases for crate in release.crates)
            # Cargo: `serde_json` is `serde-json`.
            found = self._repo_crates[repo] = (crates, {crate.replace("_", "-"): crate for crate in crates})
        return found

    def site_in(self, record_id: str, releases: Sequence[Release], line: int | None = None) -> Site | None:
        """The record's site in the first of `releases` that has it: of a message raised at several lines of
        the file, the one nearest `line` (the pasted line), else the first."""
        sites = self.sites_of(record_id)
        if not sites or not releases:
            return None
        by_ref: dict[str, list[Site]] = {}
        for site in sites:
            by_ref.setdefault(site.release.ref, []).append(site)
        for release in releases:
            here = [site for site in by_ref.get(release.ref, ()) if _same_release(site.release, release)]
            if here:
                return nearest_site(here, line)
        return None

    def nearest_release_site(self, record_id: str, line: int) -> Site | None:
        """With no release named: the site, over every release, whose line is nearest the pasted one (the
        newest release on a tie): a checkout between two releases still finds its lines."""
        sites = self.sites_of(record_id)
        if not sites:
            return None
        return min(reversed(sites), key=lambda site: abs(site.line - line))


_ROW_START = '{"filePath":"'
_ROW_ID = '","id":"'
_ROW_RELEASES = '","releases":['


def _site_row_head(line: str) -> tuple[str, str] | None:
    """(id, file path) of a key-sorted side-table row with releases, read without parsing it; None when the
    row does not start so or its path or id holds an escape (then only parsing reads it right)."""
    if not line.startswith(_ROW_START):
        return None
    path_end = line.find('"', len(_ROW_START))
    if path_end < 0 or not line.startswith(_ROW_ID, path_end):
        return None
    id_start = path_end + len(_ROW_ID)
    id_end = line.find('"', id_start)
    if id_end < 0 or not line.startswith(_ROW_RELEASES, id_end):
        return None
    path = line[len(_ROW_START) : path_end]
    record_id = line[id_start:id_end]
    if not path or not record_id or "\\" in path or "\\" in record_id:
        return None
    return record_id, path


def _add_row_sites(
    found: list[Site], row: Mapping[str, Any], by_ref: Mapping[tuple[str, str], Release]
) -> None:
    """Append the sites of one side-table row (`releases` groups) to a record's list, kept in release
    order (stable: a release's sites stay in line order)."""
    repo = str(row.get("repo", ""))
    for group in row["releases"]:
        for ref in group.get("refs", ()):
            release = by_ref.get((repo, str(ref)))
            if release is None:
                continue
            for item in group.get("sites", ()):  # every site of the message in the file
                found.append(
                    Site(
                        release,
                        group.get("crate"),
                        int(item["line"]),
                        item.get("column"),
                        item.get("kind"),
                        item.get("function"),
                        item.get("impl"),
                        item.get("condition"),
                        item.get("panicsDoc"),
                    )
                )
    found.sort(key=lambda site: site.release.order)


def _same_release(one: Release, other: Release) -> bool:
    """Equal releases; the same object, as a record's sites and a table's releases usually are, without
    comparing their fields."""
    return one is other or one == other


def nearest_site(sites: Sequence[Site], line: int | None) -> Site:
    """The site nearest `line` (the first one without a line)."""
    if line is None:
        return sites[0]
    return min(sites, key=lambda site: abs(site.line - line))


def _release_order(release: Release) -> tuple[tuple[int, int, int, int, str], str, str]:
    """Releases in version order, not by date: a backport (v0.14.1, cut after v0.20.0) is older than
    v0.15.0. A commit without a tag sits after the release whose version its crates carry."""
    tagged = version_key(release.ref) if release.is_tag else (-1, -1, -1, 0, "")
    if tagged[0] < 0:
        versions = [version_key(v) for v in release.crates.values() if v]
        tagged = max(versions, default=(-1, -1, -1, 0, ""))
    return (tagged, release.date, release.ref)


def _path_forms(path: str, crate: str | None) -> list[str]:
    """The repository paths a canonical pasted path can be: itself, without `crates/` (a repository whose
    crates sit at its root), and without `crates/<crate>/` (a repository that is one crate)."""
    forms = [path]
    if path.startswith("crates/"):
        inner = path.removeprefix("crates/")
        forms.append(inner)
        head, _, rest = inner.partition("/")
        if rest and (crate is None or head == crate):
            forms.append(rest)
    return forms


def _releases_for_version(releases: Sequence[Release], crate: str, hint: VersionHint) -> list[Release]:
    """The releases whose version of `crate` is the hinted one, tags first, newest first. A requirement
    such as `0.16` takes any 0.16.x (`0.16.0` without `=` too, as Cargo's caret does for 0.x)."""
    wanted = version_key(hint.version)
    parts = hint.version.count(".") + 1
    found: list[Release] = []
    for release in releases:
        have = release.crates.get(crate)
        if have is None:
            continue
        if hint.exact:
            if have == hint.version:
                found.append(release)
            continue
        key = version_key(have)
        same = key[:2] == wanted[:2] if wanted[0] == 0 or parts >= 2 else key[0] == wanted[0]
        if same and key[:3] >= wanted[:3]:
            found.append(release)
    return sorted(found, key=lambda r: (not r.is_tag, -r.order))
