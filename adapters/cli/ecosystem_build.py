"""`panicbot catalog ecosystem sources|build`: which releases the embedded catalog is harvested from, and
the catalog rebuilt from that list, reading git objects straight from local clones (no checkout).

`sources` resolves the release selection (tags, and the dependency versions Burn's Cargo.toml names) to
commits and writes the checked-in sources file; `build` reads only that file and the git directories, so
the same file and the same repositories give the same bytes.
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adapters.cli.dataset_tools import record_line
from adapters.cli.progress import stderr_progress
from adapters.files import write_bytes_atomically
from bot.api_surface import read_file_api
from bot.ecosystem import ReleaseHarvest, Source, api_rows, build_ecosystem, dumps_line
from bot.harvest import (
    FileHarvest,
    FunctionSpan,
    HarvestedSite,
    harvest_tree,
    is_skipped_path,
    normalise_path,
)
from bot.records import Record
from bot.releases import repository_path, version_key

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2
SOURCES_FILE = Path(__file__).resolve().parents[2] / "bot" / "data" / "ecosystem-sources.toml"
OUTPUT_STEM = "ecosystem"

BURN = "tracel-ai/burn"
# Folders harvested per repository: the crates a Burn user's program links, not tools or test suites.
HARVESTED_PATHS: dict[str, tuple[str, ...]] = {
    BURN: ("crates",),
    "tracel-ai/cubecl": ("crates",),
    "tracel-ai/cubek": ("crates",),
    "tracel-ai/burn-onnx": ("crates",),
    "gfx-rs/wgpu": ("wgpu", "wgpu-core", "wgpu-hal", "wgpu-types", "naga"),
    "rust-ndarray/ndarray": ("src",),
    "LaurentMazare/tch-rs": ("src", "torch-sys/src"),
}
# Programs of a repository's own (model checks, ONNX test suites, build tooling) that no user's program links.
EXCLUDED_FOLDERS = frozenset({"model-checks", "onnx-tests", "xtask", "burn-book", "backend-comparison"})
OLDEST_BURN = (0, 3, 0)  # the first tag of the local history
BURN_COMMIT = "2c06be351006851d42fdb6df16b976f4a82d9747"  # the commit ../shared/data was harvested at
# Dependencies read from Burn's (and cubecl's) Cargo.toml at each harvested release.
DEPENDENCIES = {"wgpu": "gfx-rs/wgpu", "ndarray": "rust-ndarray/ndarray", "tch": "LaurentMazare/tch-rs"}
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?(?:-([0-9A-Za-z.]+))?")
_DEPENDENCY_LINE = re.compile(
    r'^(?P<name>[A-Za-z0-9_-]+)\s*=\s*(?:"(?P<plain>[^"]+)"|\{(?P<table>[^}\n]*)\})', re.MULTILINE
)


class GitError(Exception):
    """A git command failed: the message says which and why."""


class GitRepository:
    """Read-only access to one git directory: refs, trees and blobs, with one `cat-file --batch` process."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self._batch: subprocess.Popen[bytes] | None = None

    def run(self, *args: str) -> str:
        done = subprocess.run(["git", f"--git-dir={self.git_dir}", *args], capture_output=True, check=False)
        if done.returncode != 0:
            reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git {' '.join(args)} in {self.git_dir}: {reason[-1] if reason else 'failed'}")
        return done.stdout.decode("utf-8", "replace")

    def tags(self) -> list[str]:
        return [tag for tag in self.run("tag", "--list").split("\n") if tag]

    def commit(self, ref: str) -> tuple[str, str]:
        """The commit a ref names, and its committer date (ISO 8601, UTC)."""
        out = self.run("log", "-1", "--format=%H %ct", f"{ref}^{{commit}}")
        sha, seconds = out.strip().split(" ", 1)
        # UTC whatever the machine's zone: the sources file must not depend on where it was written.
        return sha, datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def files(self, sha: str, paths: Sequence[str]) -> list[tuple[str, str]]:
        """(path, blob id) of every file under `paths` at commit `sha`, sorted by path."""
        out = self.run("ls-tree", "-r", "-z", "--full-tree", sha, "--", *paths)
        entries = []
        for item in out.split("\0"):
            if not item:
                continue
            meta, _, path = item.partition("\t")
            mode, kind, blob = meta.split(" ")
            if kind == "blob" and mode != "120000":  # symlinks hold a path, not source
                entries.append((path, blob))
        return sorted(entries)

    def read(self, blob: str) -> bytes:
        if self._batch is None:
            self._batch = subprocess.Popen(
                ["git", f"--git-dir={self.git_dir}", "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        assert self._batch.stdin is not None and self._batch.stdout is not None
        self._batch.stdin.write(blob.encode() + b"\n")
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().decode().split()
        if len(header) != 3:
            raise GitError(f"{self.git_dir}: object {blob} is missing")
        data = self._batch.stdout.read(int(header[2]))
        self._batch.stdout.read(1)  # the newline after the object
        return data

    def close(self) -> None:
        if self._batch is not None:
            if self._batch.stdin is not None:
                self._batch.stdin.close()
            self._batch.wait()
            self._batch = None


def mirror_dir(mirrors: Path, repo: str) -> Path:
    """Where the search tool's fetch puts a repository: `<mirrors>/<owner>+<name>/repo`."""
    return mirrors / repo.replace("/", "+") / "repo"


# ---- Crates and their versions ------------------------------------------------------------------------


def _toml(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def crate_versions(repository: GitRepository, sha: str) -> dict[str, tuple[str, str]]:
    """Folder of each Cargo.toml package at `sha` -> (package name, version); a version inherited from the
    workspace (`version.workspace = true`) is the root's `[workspace.package] version`."""
    manifests = [(path, blob) for path, blob in repository.files(sha, ["."]) if path.endswith("Cargo.toml")]
    parsed = {path: _toml(repository.read(blob).decode("utf-8", "replace")) for path, blob in manifests}
    root = parsed.get("Cargo.toml", {})
    workspace_version = str(root.get("workspace", {}).get("package", {}).get("version", ""))
    crates: dict[str, tuple[str, str]] = {}
    for path, manifest in parsed.items():
        package = manifest.get("package")
        if not isinstance(package, dict) or "name" not in package:
            continue
        version = package.get("version", "")
        if isinstance(version, dict):
            version = workspace_version if version.get("workspace") else ""
        crates[path.removesuffix("Cargo.toml").rstrip("/")] = (str(package["name"]), str(version))
    return crates


def crate_of_file(path: str, crates: Mapping[str, tuple[str, str]]) -> tuple[str, str] | None:
    """The package whose folder holds `path` (the deepest one)."""
    folder = path
    while folder:
        folder = folder.rpartition("/")[0]
        if folder in crates:
            return crates[folder]
    return crates.get("")


# ---- Harvest of one release ---------------------------------------------------------------------------


@dataclass
class HarvestCache:
    """A file's harvest depends on its path and content only: a blob unchanged between releases is parsed
    once (most are)."""

    found: dict[tuple[str, str], FileHarvest]
    apis: dict[str, dict[str, Any]] = field(default_factory=dict)  # blob -> `read_file_api`
    parsed: int = 0
    reused: int = 0


def harvest_release(repository: GitRepository, source: Source, cache: HarvestCache) -> ReleaseHarvest:
    """The sites, crates, functions and API of one release, every path as the catalog files it
    (`source.catalog_path`: Burn's top-level crates of before v0.13 under `crates/`)."""
    paths = source.paths or (".",)
    crates = {
        source.catalog_path(folder) if folder else folder: crate
        for folder, crate in crate_versions(repository, source.sha).items()
    }
    harvested: list[tuple[str, FileHarvest]] = []
    blobs: dict[str, str] = {}
    test_paths: set[str] = set()
    for tree_path, blob in repository.files(source.sha, paths):
        path = source.catalog_path(tree_path)
        if (
            not path.endswith(".rs")
            or is_skipped_path(path)
            or EXCLUDED_FOLDERS.intersection(path.split("/"))
        ):
            continue
        key = (path, blob)
        result = cache.found.get(key)
        if result is None:
            text = repository.read(blob).decode("utf-8", errors="replace")
            result = harvest_tree(text, path, repo=source.repo, sha="")
            cache.found[key] = result
            cache.parsed += 1
        else:
            cache.reused += 1
        test_paths.update(result.test_modules)
        harvested.append((path, result))
        blobs[path] = blob
    kept: list[HarvestedSite] = []
    files: dict[str, tuple[str, str]] = {}
    functions: dict[str, tuple[FunctionSpan, ...]] = {}
    apis: dict[str, dict[str, Any]] = {}
    for path, harvest in harvested:
        normalised = normalise_path(path)
        if normalised in test_paths or any(normalised.startswith(p) for p in test_paths if p.endswith("/")):
            continue  # a `#[cfg(test)] mod NAME;` file, or one below it
        crate = crate_of_file(normalised, crates)
        if crate is not None:
            files[normalised] = crate
        kept.extend(harvest.sites)
        if harvest.functions:
            functions[normalised] = tuple(harvest.functions)
        if crate is not None and _is_library_source(normalised):
            api = cache.apis.get(blobs[path])
            if api is None:
                text = repository.read(blobs[path]).decode("utf-8", errors="replace")
                api = cache.apis[blobs[path]] = read_file_api(text)
            if api:
                apis[normalised] = api
    return ReleaseHarvest(source, kept, files, functions, apis)


def _is_library_source(path: str) -> bool:
    """A file of a crate's library (under its `src/`, not a binary's `src/bin/` or `main.rs`)."""
    parts = path.split("/")
    return "src" in parts and "bin" not in parts and not path.endswith("/main.rs")


# ---- The sources file ---------------------------------------------------------------------------------


def read_sources(path: Path) -> tuple[list[Source], list[dict[str, str]]]:
    """The sources and the releases that could not be harvested (listed, with why)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    sources = [
        Source(
            repo=str(item["repo"]),
            ref=str(item["ref"]),
            sha=str(item["sha"]),
            date=str(item["date"]),
            paths=tuple(str(p) for p in item.get("paths", ())),
            path_prefix=str(item.get("path_prefix", "")),
        )
        for item in data.get("source", [])
    ]
    missing = [{str(k): str(v) for k, v in item.items()} for item in data.get("unavailable", [])]
    return sources, missing


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_sources(path: Path, sources: Sequence[Source], missing: Sequence[Mapping[str, str]]) -> None:
    lines = [
        "# Every release the embedded ecosystem catalog (bot/data/ecosystem.*) is harvested from.",
        "# Written by `panicbot catalog ecosystem sources`; read by `panicbot catalog ecosystem build`.",
        "# ref: the tag, or the commit sha when the release has no tag here; date: the commit's date.",
        "# paths: the folders harvested; path_prefix: what the catalog puts before their paths (Burn",
        "# before v0.13 kept its crates at the top level: `burn-core/src/x.rs` is `crates/burn-core/...`).",
        "",
    ]
    for source in sources:
        lines += [
            "[[source]]",
            f"repo = {_toml_string(source.repo)}",
            f"ref = {_toml_string(source.ref)}",
            f"sha = {_toml_string(source.sha)}",
            f"date = {_toml_string(source.date)}",
            "paths = [" + ", ".join(_toml_string(p) for p in source.paths) + "]",
        ]
        if source.path_prefix:
            lines.append(f"path_prefix = {_toml_string(source.path_prefix)}")
        lines.append("")
    for item in missing:
        lines.append("[[unavailable]]")
        lines += [f"{key} = {_toml_string(value)}" for key, value in item.items()]
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def _requirement(spec: str) -> str | None:
    """The version a Cargo requirement names (`"0.15.0"`, `{ version = "=0.9.0" }`); None for git/path."""
    match = re.search(r'version\s*=\s*"([^"]+)"', spec) if "=" in spec else None
    value = match.group(1) if match else (spec if "=" not in spec else None)
    if value is None:
        return None
    value = value.strip().lstrip("=^~ ")
    return value if _VERSION.fullmatch(value) or re.fullmatch(r"\d+(\.\d+)*", value) else None


def dependency_versions(manifest: str) -> dict[str, set[str]]:
    """Versions of the tracked dependencies that a Cargo.toml names (workspace and crate tables)."""
    found: dict[str, set[str]] = {}
    for match in _DEPENDENCY_LINE.finditer(manifest):
        name = match.group("name")
        if name not in DEPENDENCIES:
            continue
        version = _requirement(match.group("plain") or match.group("table") or "")
        if version:
            found.setdefault(name, set()).add(version)
    return found


def _version_bump_commit(repository: GitRepository, version: str) -> str | None:
    """The commit that set the root Cargo.toml's version to `version` (a release without a tag here)."""
    out = repository.run("log", "--format=%H", "-G", r"^version = ", "--", "Cargo.toml")
    for sha in out.split():
        manifest = repository.run("show", f"{sha}:Cargo.toml")
        package = _toml(manifest).get("package", {})
        if isinstance(package, dict) and str(package.get("version", "")) == version:
            return sha
    return None


def _dependency_ref(repository: GitRepository, repo: str, version: str) -> str | None:
    """The tag (or version-bump commit) of a dependency release, matching `0.19` to its newest 0.19.x."""
    wanted = version.split(".")
    tags = repository.tags()
    candidates = []
    for tag in tags:
        bare = tag.removeprefix("wgpu-").removeprefix("v")
        if not re.fullmatch(r"\d+\.\d+\.\d+", bare):
            continue
        parts = bare.split(".")
        if parts[: len(wanted)] == wanted[: len(parts)] and (
            len(wanted) == 3 or parts[: len(wanted)] == wanted
        ):
            candidates.append((version_key(bare), tag))
    exact = [tag for key, tag in candidates if tag.removeprefix("wgpu-").removeprefix("v") == version]
    if exact:
        return sorted(exact)[0]
    if len(wanted) < 3 and candidates:
        return max(candidates)[1]
    full = version if len(wanted) == 3 else f"{version}.0"
    return _version_bump_commit(repository, full)


def burn_layout(repository: GitRepository, sha: str) -> tuple[tuple[str, ...], str]:
    """The folders to harvest at a Burn commit and what the catalog puts before their paths: `crates/`
    as it is from v0.13 on; before, the crates sat at the top level (`burn-tensor/`, `burn-core/`, ...):
    those folders, filed under `crates/` (where v0.13 moved them)."""
    top = repository.run("ls-tree", "--full-tree", sha).splitlines()
    folders = [line.partition("\t")[2] for line in top if line.split(" ", 2)[1:2] == ["tree"]]
    if "crates" in folders:
        return HARVESTED_PATHS[BURN], ""
    with_manifest = {
        path.partition("/")[0]
        for path, _ in repository.files(sha, [f"{folder}/Cargo.toml" for folder in folders])
    }
    crates = tuple(
        folder
        for folder in folders
        if folder.startswith("burn") and folder in with_manifest and folder not in EXCLUDED_FOLDERS
    )
    return crates, "crates/"


def resolve_sources(repositories: Mapping[str, GitRepository]) -> tuple[list[Source], list[dict[str, str]]]:
    """The release selection: Burn's release tags from v0.3.0 (pre-releases too) and the data set's
    commit; every tag of cubecl, cubek and burn-onnx (and their newest commit); and the wgpu, ndarray and
    tch releases that those Burn and cubecl releases depend on."""
    sources: list[Source] = []
    missing: list[dict[str, str]] = []

    def add(
        repo: str, ref: str, sha: str, date: str, layout: tuple[tuple[str, ...], str] | None = None
    ) -> None:
        paths, prefix = layout or (HARVESTED_PATHS[repo], "")
        for index, known in enumerate(sources):
            if known.repo == repo and known.sha == sha:
                if sha not in (ref, known.ref) and version_key(ref) > version_key(known.ref):
                    # Two tags on one commit (cubecl's v0.7.1 and v0.8.0): the release is the newer one.
                    sources[index] = Source(repo, ref, sha, date, paths, prefix)
                return
        sources.append(Source(repo, ref, sha, date, paths, prefix))

    burn = repositories[BURN]
    burn_tags = [
        tag
        for tag in burn.tags()
        if re.fullmatch(r"v\d+\.\d+\.\d+(?:-pre\.\d+)?", tag) and version_key(tag)[:3] >= OLDEST_BURN
    ]
    for tag in sorted(burn_tags, key=version_key):
        sha, date = burn.commit(tag)
        add(BURN, tag, sha, date, burn_layout(burn, sha))
    sha, date = burn.commit(BURN_COMMIT)
    add(BURN, sha, sha, date, burn_layout(burn, sha))
    wanted: dict[str, set[str]] = {}
    for source in list(sources):
        for name, versions in dependency_versions(burn.run("show", f"{source.sha}:Cargo.toml")).items():
            wanted.setdefault(name, set()).update(versions)
    for repo in ("tracel-ai/cubecl", "tracel-ai/cubek", "tracel-ai/burn-onnx"):
        repository = repositories.get(repo)
        if repository is None:
            missing.append({"repo": repo, "reason": "no git directory given"})
            continue
        for tag in sorted((t for t in repository.tags() if t.startswith("v")), key=version_key):
            add(repo, tag, *repository.commit(tag))
        sha, date = repository.commit("HEAD")
        add(repo, sha, sha, date)
        if repo == "tracel-ai/cubecl":
            for source in [s for s in sources if s.repo == repo]:
                manifests = [p for p, _ in repository.files(source.sha, ["."]) if p.endswith("Cargo.toml")]
                for manifest in manifests:
                    text = repository.run("show", f"{source.sha}:{manifest}")
                    for name, versions in dependency_versions(text).items():
                        wanted.setdefault(name, set()).update(versions)
    for name in sorted(wanted):
        repo = DEPENDENCIES[name]
        repository = repositories.get(repo)
        for version in sorted(wanted[name], key=version_key):
            ref = _dependency_ref(repository, repo, version) if repository is not None else None
            if repository is None or ref is None:
                reason = "no git directory given" if repository is None else "not in the local history"
                missing.append({"repo": repo, "version": version, "reason": reason})
                continue
            sha, date = repository.commit(ref)
            add(repo, ref if not re.fullmatch(r"[0-9a-f]{40}", ref) else sha, sha, date)
    return sources, missing


# ---- Build --------------------------------------------------------------------------------------------


def _gzip_lines(path: Path, lines: Sequence[str]) -> None:
    """Deterministic gzip (no name, no time): the same lines give the same bytes."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as handle:
        for line in lines:
            handle.write(line.encode("utf-8") + b"\n")
    write_bytes_atomically(path, buffer.getvalue())


def _xz_lines(path: Path, lines: Sequence[str]) -> None:
    """Deterministic xz (the same lines give the same bytes): for a large table read only by `catalog lint`
    and the console's draft preview, where 45 % fewer bytes than gzip are worth 40 ms more to read it."""
    data = b"".join(line.encode("utf-8") + b"\n" for line in lines)
    write_bytes_atomically(path, lzma.compress(data, format=lzma.FORMAT_XZ, preset=9 | lzma.PRESET_EXTREME))


def build(
    sources: Sequence[Source], repositories: Mapping[str, GitRepository], out_dir: Path
) -> dict[str, int]:
    """Harvest every source and write `<out_dir>/ecosystem.jsonl.gz` (records), `ecosystem.sites.jsonl.gz`
    (the releases of each), `ecosystem.releases.jsonl.gz` (each release and its crate versions) and
    `ecosystem.functions.jsonl.gz` (every function's lines per file per release, to name any pasted line)."""
    cache = HarvestCache({})
    harvests: list[ReleaseHarvest] = []
    with stderr_progress() as progress:
        task = progress.add_task("harvest", total=len(sources))
        for source in sources:
            progress.update(task, description=f"{source.repo} {source.ref[:12]}")
            harvests.append(harvest_release(repositories[source.repo], source, cache))
            progress.advance(task)
    newest = max((s.date for s in sources), default="")
    dataset_version = newest
    catalog = build_ecosystem(harvests, dataset_version)
    out_dir.mkdir(parents=True, exist_ok=True)
    _gzip_lines(
        out_dir / f"{OUTPUT_STEM}.jsonl.gz", [record_line(r, dataset_version) for r in catalog.records]
    )
    _gzip_lines(out_dir / f"{OUTPUT_STEM}.sites.jsonl.gz", [dumps_line(row) for row in catalog.sites])
    _gzip_lines(out_dir / f"{OUTPUT_STEM}.releases.jsonl.gz", [dumps_line(row) for row in catalog.releases])
    _gzip_lines(out_dir / f"{OUTPUT_STEM}.functions.jsonl.gz", [dumps_line(row) for row in catalog.functions])
    _xz_lines(out_dir / f"{OUTPUT_STEM}.api.jsonl.xz", [dumps_line(row) for row in api_rows(harvests)])
    history = history_rows(catalog.records, catalog.sites, catalog.releases, repositories)
    _gzip_lines(out_dir / f"{OUTPUT_STEM}.history.jsonl.gz", [dumps_line(row) for row in history])
    return {
        "sources": len(sources),
        "records": len(catalog.records),
        "files parsed": cache.parsed,
        "files reused": cache.reused,
    }


_PULL_REQUEST = re.compile(r"\(#(\d+)\)")


def _commits_between(
    repository: GitRepository, start: str, end: str, paths: Sequence[str]
) -> list[tuple[str, str]]:
    """(sha, subject) of each commit touching `paths` after `start` up to `end`, oldest first."""
    out = repository.run("log", "--format=%H%x1f%s", "--reverse", f"{start}..{end}", "--", *paths)
    pairs = (line.partition("\x1f") for line in out.splitlines())
    return [(sha, subject) for sha, mark, subject in pairs if mark]


def _commit_fields(sha: str, subject: str) -> dict[str, object]:
    """A history row's commit: short sha, subject, and the pull request its subject names."""
    pull = _PULL_REQUEST.search(subject)
    return {"commit": sha[:10], "subject": subject[:200], "pullRequest": int(pull.group(1)) if pull else None}


_NOT_LITERAL = re.compile(r'[\\"{}\n]')
MIN_NEEDLE = 8


def _needle(message: str) -> str | None:
    """The longest piece of a message that its source literal holds as written (no escape, no brace)."""
    pieces = sorted(_NOT_LITERAL.split(message), key=len, reverse=True)
    return pieces[0] if pieces and len(pieces[0]) >= MIN_NEEDLE else None


def removal_rows(
    records: Sequence[Record],
    sites: Sequence[Mapping[str, Any]],
    releases: Sequence[Mapping[str, Any]],
    repositories: Mapping[str, GitRepository],
) -> list[dict[str, Any]]:
    """For each record that a later release no longer raises: the commit, between the last release that
    has it and the next one, that took its message out of the file (short sha, subject, pull request
    number when the subject names one). Facts only: no diff text."""
    order: dict[str, list[tuple[str, str]]] = {}
    prefixes: dict[tuple[str, str], str] = {}
    for row in releases:
        order.setdefault(str(row["repo"]), []).append((str(row["ref"]), str(row["sha"])))
        prefixes[(str(row["repo"]), str(row["ref"]))] = str(row.get("pathPrefix") or "")
    position = {(repo, ref): index for repo, refs in order.items() for index, (ref, _) in enumerate(refs)}
    logs: dict[tuple[str, str, str, str], list[tuple[str, str]]] = {}
    rows: list[dict[str, Any]] = []
    for record, site_row in zip(records, sites, strict=True):
        repo, path = str(site_row["repo"]), str(site_row["filePath"])
        refs = [ref for group in site_row["releases"] for ref in group["refs"]]
        last = max(position[(repo, ref)] for ref in refs)
        if last + 1 >= len(order[repo]) or repo not in repositories:
            continue
        needle = _needle(record.errorMessage)
        if needle is None:
            continue
        (last_ref, last_sha), (gone_ref, gone_sha) = order[repo][last], order[repo][last + 1]
        repository = repositories[repo]
        # The file's path in each of the two trees (Burn's crates moved under `crates/` in v0.13).
        tree_paths = tuple(
            dict.fromkeys(repository_path(path, prefixes[(repo, ref)]) for ref in (last_ref, gone_ref))
        )
        key = (repo, path, last_sha, gone_sha)
        if key not in logs:
            logs[key] = _commits_between(repository, last_sha, gone_sha, tree_paths)
        found = _first_without(repository, logs[key], tree_paths, needle)
        if found is None:
            continue
        rows.append(
            {
                "id": record.id,
                "repo": repo,
                "lastRef": last_ref,
                "goneRef": gone_ref,
                **_commit_fields(*found),
            }
        )
    return sorted(rows, key=lambda row: str(row["id"]))


def history_rows(
    records: Sequence[Record],
    sites: Sequence[Mapping[str, Any]],
    releases: Sequence[Mapping[str, Any]],
    repositories: Mapping[str, GitRepository],
) -> list[dict[str, Any]]:
    """The history table: the removal rows (`removal_rows`), then the condition-change rows
    (`condition_rows`), each set in its own order."""
    return [
        *removal_rows(records, sites, releases, repositories),
        *condition_rows(records, sites, releases, repositories),
    ]


def _conditions_by_ref(site_row: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Per release ref, the firing conditions of the record's sites in the file, as `bot.history` reads them
    (sorted, unknown ones left out)."""
    found: dict[str, tuple[str, ...]] = {}
    for group in site_row["releases"]:
        conditions = tuple(sorted({str(s["condition"]) for s in group["sites"] if s.get("condition")}))
        for ref in group["refs"]:
            found[str(ref)] = conditions
    return found


def _conditions_at(
    repository: GitRepository, commit: str, paths: Sequence[str], file_path: str, message: str, repo: str
) -> tuple[str, ...] | None:
    """The firing conditions of `message`'s sites in the file at `commit` (harvested as the build harvests a
    release), or None when the file is at none of its paths there."""
    for path in paths:
        try:
            text = repository.read(f"{commit}:{path}").decode("utf-8", "replace")
        except GitError:
            continue
        found = harvest_tree(text, file_path, repo=repo, sha=commit).sites
        return tuple(sorted({s.condition for s in found if s.message == message and s.condition}))
    return None


def condition_rows(
    records: Sequence[Record],
    sites: Sequence[Mapping[str, Any]],
    releases: Sequence[Mapping[str, Any]],
    repositories: Mapping[str, GitRepository],
) -> list[dict[str, Any]]:
    """For each release from which a record's firing condition reads differently than in the release
    before it (as `bot.history.record_history` finds them): the commit between the two, in the file's git
    log, from which the condition reads as in the later release (short sha, subject, pull request number
    when the subject names one). Only when the two releases, harvested again, read as the tables say (the
    harvester has not changed since), and walking back from the later release: the last commit before
    which the condition read otherwise. Facts only: no diff text."""
    order: dict[str, list[tuple[str, str]]] = {}
    prefixes: dict[tuple[str, str], str] = {}
    for row in releases:
        order.setdefault(str(row["repo"]), []).append((str(row["ref"]), str(row["sha"])))
        prefixes[(str(row["repo"]), str(row["ref"]))] = str(row.get("pathPrefix") or "")
    position = {(repo, ref): index for repo, refs in order.items() for index, (ref, _) in enumerate(refs)}
    rows: list[dict[str, Any]] = []
    for record, site_row in zip(records, sites, strict=True):
        repo, path = str(site_row["repo"]), str(site_row["filePath"])
        repository = repositories.get(repo)
        if repository is None:
            continue
        by_ref = _conditions_by_ref(site_row)
        previous: tuple[str, tuple[str, ...]] | None = None
        for ref in sorted(by_ref, key=lambda r: position[(repo, r)]):
            conditions = by_ref[ref]
            if not conditions:
                continue
            if previous is not None and conditions != previous[1]:
                since_ref = previous[0]
                since_sha = order[repo][position[(repo, since_ref)]][1]
                changed_sha = order[repo][position[(repo, ref)]][1]
                tree_paths = tuple(
                    dict.fromkeys(repository_path(path, prefixes[(repo, r)]) for r in (since_ref, ref))
                )
                found = _condition_commit(
                    repository,
                    record.errorMessage,
                    path,
                    repo,
                    (since_sha, previous[1]),
                    (changed_sha, conditions),
                    tree_paths,
                )
                if found is not None:
                    rows.append(
                        {
                            "id": record.id,
                            "repo": repo,
                            "sinceRef": since_ref,
                            "changedRef": ref,
                            **_commit_fields(*found),
                        }
                    )
            previous = (ref, conditions)
    return sorted(
        rows, key=lambda row: (str(row["id"]), position[(str(row["repo"]), str(row["changedRef"]))])
    )


def _condition_commit(
    repository: GitRepository,
    message: str,
    file_path: str,
    repo: str,
    since: tuple[str, tuple[str, ...]],
    changed: tuple[str, tuple[str, ...]],
    paths: Sequence[str],
) -> tuple[str, str] | None:
    """The commit (sha, subject) between two releases from which `message`'s conditions read as at the
    later one; None when the two releases do not read as the tables say, or no commit of the file's log
    between them does."""
    (since_sha, before), (changed_sha, after) = since, changed
    if _conditions_at(repository, since_sha, paths, file_path, message, repo) != before:
        return None
    if _conditions_at(repository, changed_sha, paths, file_path, message, repo) != after:
        return None
    commits = _commits_between(repository, since_sha, changed_sha, paths)
    found = None
    for sha, subject in reversed(commits):  # newest first: the last commit before which it read otherwise
        if _conditions_at(repository, sha, paths, file_path, message, repo) != after:
            break
        found = (sha, subject)
    return found


def _holds(repository: GitRepository, commit: str, paths: Sequence[str], needle: str) -> bool:
    """Whether the file, at any of its paths, holds `needle` at `commit`."""
    for path in paths:
        try:
            if needle in repository.read(f"{commit}:{path}").decode("utf-8", "replace"):
                return True
        except GitError:
            continue  # the file is not (or no longer) at this path at that commit
    return False


def _first_without(
    repository: GitRepository, commits: Sequence[tuple[str, str]], paths: Sequence[str], needle: str
) -> tuple[str, str] | None:
    """The first commit (oldest first) after which the file no longer holds `needle` (binary search: a
    message taken out stays out within one release's commits, nearly always)."""
    low, high = 0, len(commits) - 1
    found = None
    while low <= high:
        middle = (low + high) // 2
        if _holds(repository, commits[middle][0], paths, needle):
            low = middle + 1
        else:
            found, high = commits[middle], middle - 1
    return found


def open_repositories(
    repos: Sequence[str], mirrors: Path | None, git_dirs: Sequence[str]
) -> dict[str, GitRepository]:
    """`--git-dir OWNER/NAME=PATH` wins over `--mirrors DIR` (the fetch layout)."""
    given: dict[str, Path] = {}
    for item in git_dirs:
        repo, _, folder = item.partition("=")
        if not folder:
            raise ValueError(f"--git-dir wants OWNER/NAME=PATH, got {item!r}")
        given[repo] = Path(folder)
    found: dict[str, GitRepository] = {}
    for repo in repos:
        path = given.get(repo) or (mirror_dir(mirrors, repo) if mirrors else None)
        if path is not None and path.is_dir():
            found[repo] = GitRepository(path)
    return found


def iter_lines(path: Path) -> Iterator[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            yield line.rstrip("\n")


def _warn(message: str) -> None:
    print(f"panicbot: {message}", file=sys.stderr)


def run_sources(out: Path, mirrors: Path | None, git_dirs: Sequence[str]) -> int:
    """Resolve the release selection against local clones and write the sources file."""
    try:
        repositories = open_repositories(list(HARVESTED_PATHS), mirrors, git_dirs)
    except ValueError as exc:
        _warn(str(exc))
        return EXIT_USAGE
    if BURN not in repositories:
        _warn(f"no git directory for {BURN}: give --mirrors DIR or --git-dir {BURN}=PATH")
        return EXIT_USAGE
    try:
        sources, missing = resolve_sources(repositories)
    except GitError as exc:
        _warn(str(exc))
        return EXIT_PROBLEMS
    finally:
        for repository in repositories.values():
            repository.close()
    write_sources(out, sources, missing)
    print(f"{out}: {len(sources)} sources, {len(missing)} releases not available", file=sys.stderr)
    return EXIT_OK


def run_build(sources_file: Path, out_dir: Path, mirrors: Path | None, git_dirs: Sequence[str]) -> int:
    """Rebuild the ecosystem catalog from the sources file; every repository it names must be given."""
    try:
        sources, _ = read_sources(sources_file)
    except (OSError, tomllib.TOMLDecodeError, KeyError) as exc:
        _warn(f"{sources_file}: cannot read the sources: {exc}")
        return EXIT_USAGE
    try:
        repositories = open_repositories(sorted({s.repo for s in sources}), mirrors, git_dirs)
    except ValueError as exc:
        _warn(str(exc))
        return EXIT_USAGE
    absent = sorted({s.repo for s in sources} - set(repositories))
    if absent:
        wanted = "give --mirrors DIR or --git-dir OWNER/NAME=PATH"
        _warn("no git directory for " + ", ".join(absent) + f" ({wanted})")
        return EXIT_USAGE
    try:
        counts = build(sources, repositories, out_dir)
    except GitError as exc:
        _warn(str(exc))
        return EXIT_PROBLEMS
    finally:
        for repository in repositories.values():
            repository.close()
    print(", ".join(f"{value} {name}" for name, value in counts.items()), file=sys.stderr)
    return EXIT_OK


def run_history(data_dir: Path, mirrors: Path | None, git_dirs: Sequence[str]) -> int:
    """Rewrite only `<data_dir>/ecosystem.history.jsonl.gz` from the catalog already built there (records,
    sites and releases read back, not harvested again) and the git histories: the same table `build` writes,
    the other files untouched."""
    try:
        records = [
            Record.model_validate(json.loads(line)["record"])
            for line in iter_lines(data_dir / f"{OUTPUT_STEM}.jsonl.gz")
        ]
        sites = [json.loads(line) for line in iter_lines(data_dir / f"{OUTPUT_STEM}.sites.jsonl.gz")]
        releases = [json.loads(line) for line in iter_lines(data_dir / f"{OUTPUT_STEM}.releases.jsonl.gz")]
    except (OSError, ValueError, KeyError) as exc:
        _warn(f"{data_dir}: cannot read the built catalog: {exc}")
        return EXIT_USAGE
    if [r.id for r in records] != [str(row["id"]) for row in sites]:
        _warn(f"{data_dir}: the records and the sites table are not in the same order: rebuild the catalog")
        return EXIT_USAGE
    try:
        repositories = open_repositories(sorted({str(row["repo"]) for row in releases}), mirrors, git_dirs)
    except ValueError as exc:
        _warn(str(exc))
        return EXIT_USAGE
    if not repositories:
        _warn("no git directory found: give --mirrors DIR or --git-dir OWNER/NAME=PATH")
        return EXIT_USAGE
    try:
        rows = history_rows(records, sites, releases, repositories)
    except GitError as exc:
        _warn(str(exc))
        return EXIT_PROBLEMS
    finally:
        for repository in repositories.values():
            repository.close()
    _gzip_lines(data_dir / f"{OUTPUT_STEM}.history.jsonl.gz", [dumps_line(row) for row in rows])
    changes = sum(1 for row in rows if "changedRef" in row)
    print(f"{len(rows) - changes} removals, {changes} condition changes", file=sys.stderr)
    return EXIT_OK
