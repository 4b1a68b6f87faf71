"""`panicbot catalog ecosystem sources|build` on a tiny real git repository: crate versions from the
manifests, test code and excluded folders skipped, deterministic gzip output that the catalog loader and the
release-aware lookup read back."""

from __future__ import annotations

import gzip
import io
import json
import lzma
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.cli import ecosystem_build
from adapters.cli.ecosystem_build import (
    GitRepository,
    build,
    crate_versions,
    harvest_release,
    read_sources,
    resolve_sources,
    run_build,
    write_sources,
)
from adapters.cli.main import main
from bot.api_table import ApiTable
from bot.ecosystem import Source
from bot.harvest import record_id
from bot.lint import lint_catalog
from bot.lookup import PanicLookup, result_json
from bot.records import Catalog, load_catalog

REPO = "acme/widgets"
OUTPUTS = ("ecosystem.jsonl.gz", "ecosystem.sites.jsonl.gz", "ecosystem.releases.jsonl.gz")
INDEX = "index.crates.io-1949cf8c6b5b557f"
NOTE = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"

OUT_OF_RANGE = "index {} out of range for length {}"
OLD_SHAPE = "Tensor shape mismatch"
NEW_SHAPE = "Tensor shapes do not match: {:?} vs {:?}"
MODEL_FILE = "could not read the model file"

# ---- a tiny repository -----------------------------------------------------------------------------------


def git_env(home: Path) -> dict[str, str]:
    """No user or system configuration, fixed names: the same files and dates give the same commits."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="Test Author",
        GIT_AUTHOR_EMAIL="author@example.com",
        GIT_COMMITTER_NAME="Test Committer",
        GIT_COMMITTER_EMAIL="committer@example.com",
    )
    return env


@dataclass
class TinyRepo:
    root: Path
    env: dict[str, str]

    @property
    def git_dir(self) -> Path:
        return self.root / ".git"

    def git(self, *args: str, date: str = "2024-01-01T00:00:00+00:00") -> str:
        env = {**self.env, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        done = subprocess.run(
            ["git", *args], cwd=self.root, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    def write(self, files: Mapping[str, str | None]) -> None:
        for path, text in files.items():
            target = self.root / path
            if text is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    def commit(self, message: str, date: str, files: Mapping[str, str | None], tag: str | None = None) -> str:
        self.write(files)
        self.git("add", "-A", date=date)
        self.git("commit", "-q", "-m", message, date=date)
        if tag:
            self.git("tag", tag, date=date)
        return self.git("rev-parse", "HEAD")


def new_repo(path: Path, home: Path) -> TinyRepo:
    path.mkdir(parents=True)
    home.mkdir(parents=True, exist_ok=True)
    repo = TinyRepo(path, git_env(home))
    repo.git("init", "-q")
    repo.git("symbolic-ref", "HEAD", "refs/heads/main")
    return repo


def workspace_manifest(version: str) -> str:
    return (
        '[workspace]\nmembers = ["crates/*"]\nresolver = "2"\n\n'
        f'[workspace.package]\nversion = "{version}"\nedition = "2021"\n'
    )


MYCRATE_MANIFEST = (
    '[package]\nname = "mycrate"\nversion.workspace = true\nedition.workspace = true\n\n[dependencies]\n'
)


def othercrate_manifest(version: str) -> str:
    return f'[package]\nname = "othercrate"\nversion = "{version}"\nedition = "2021"\n'


def lib_rs(prelude_lines: int, shape_arguments: str) -> str:
    """mycrate's lib.rs: `prelude_lines` lines before `checked` (its panic moves with them)."""
    prelude = "".join(f"// line {n}\n" for n in range(prelude_lines))
    return (
        prelude
        + "pub fn checked(index: usize, len: usize) -> usize {\n"
        + "    if index >= len {\n"
        + '        panic!("index {} out of range for length {}", index, len);\n'
        + "    }\n"
        + "    index\n"
        + "}\n"
        + "\n"
        + "pub fn same_shape(a: &[usize], b: &[usize]) {\n"
        + f"    assert_eq!(a, b, {shape_arguments});\n"
        + "}\n"
        + "\n"
        + "#[cfg(test)]\n"
        + "mod tests;\n"
        + "\n"
        + "#[cfg(test)]\n"
        + "mod inline_tests {\n"
        + "    #[test]\n"
        + "    fn inline() {\n"
        + '        panic!("inline test module panic");\n'
        + "    }\n"
        + "}\n"
    )


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.split("\n"), start=1) if needle in line)


V1_LIB = lib_rs(0, f'"{OLD_SHAPE}"')
V2_LIB = lib_rs(4, f'"{NEW_SHAPE}", a, b')
V1_LINE = line_of(V1_LIB, "out of range")
V2_LINE = line_of(V2_LIB, "out of range")

FIRST_RELEASE = {
    "Cargo.toml": workspace_manifest("0.1.0"),
    "crates/mycrate/Cargo.toml": MYCRATE_MANIFEST,
    "crates/mycrate/src/lib.rs": V1_LIB,
    "crates/mycrate/src/tests.rs": 'fn helper() {\n    panic!("out-of-line test module panic");\n}\n',
    "crates/mycrate/tests/integration.rs": 'fn t() {\n    panic!("integration test panic");\n}\n',
    "crates/othercrate/Cargo.toml": othercrate_manifest("2.0.0"),
    "crates/othercrate/src/lib.rs": (
        "pub fn load(path: &str) -> String {\n"
        f'    std::fs::read_to_string(path).expect("{MODEL_FILE}")\n'
        "}\n"
    ),
    "crates/model-checks/Cargo.toml": '[package]\nname = "model-checks"\nversion = "0.0.0"\n',
    "crates/model-checks/src/main.rs": 'fn main() {\n    panic!("model check failed");\n}\n',
}
SECOND_RELEASE: dict[str, str | None] = {
    "Cargo.toml": workspace_manifest("0.2.0"),
    "crates/mycrate/src/lib.rs": V2_LIB,
    "crates/othercrate/Cargo.toml": othercrate_manifest("2.1.0"),
}
SECOND_SUBJECT = "Reword the shape check (#42)"
SKIPPED_MESSAGES = {
    "out-of-line test module panic",
    "integration test panic",
    "inline test module panic",
    "model check failed",
}


@dataclass
class Built:
    repo: TinyRepo
    sources: list[Source]
    sources_file: Path
    out: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Two tagged releases, their sources file, and the catalog built from them (once for the module)."""
    base = tmp_path_factory.mktemp("ecosystem")
    repo = new_repo(base / "widgets", base / "home")
    repo.commit("first", "2024-01-01T10:00:00+00:00", FIRST_RELEASE, tag="v0.1.0")
    repo.commit(SECOND_SUBJECT, "2024-06-01T10:00:00+00:00", SECOND_RELEASE, tag="v0.2.0")
    repository = GitRepository(repo.git_dir)
    try:
        sources = [Source(REPO, tag, *repository.commit(tag), ("crates",)) for tag in ("v0.1.0", "v0.2.0")]
    finally:
        repository.close()
    sources_file = base / "sources.toml"
    write_sources(sources_file, sources, [])
    out = base / "out"
    assert run_build(sources_file, out, None, [f"{REPO}={repo.git_dir}"]) == 0
    return Built(repo, sources, sources_file, out)


def read_jsonl_gz(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


# ---- git objects, crates and the harvest of one release ---------------------------------------------


def test_release_commits_and_their_utc_dates(built: Built) -> None:
    v1, v2 = built.sources
    assert (v1.ref, v1.date) == ("v0.1.0", "2024-01-01T10:00:00Z")
    assert (v2.ref, v2.date) == ("v0.2.0", "2024-06-01T10:00:00Z")
    assert len(v1.sha) == 40 and v1.sha != v2.sha


def test_crate_versions_read_the_workspace_version(built: Built) -> None:
    repository = GitRepository(built.repo.git_dir)
    try:
        v1, v2 = (crate_versions(repository, source.sha) for source in built.sources)
    finally:
        repository.close()
    assert v1["crates/mycrate"] == ("mycrate", "0.1.0")
    assert v1["crates/othercrate"] == ("othercrate", "2.0.0")
    assert v2["crates/mycrate"] == ("mycrate", "0.2.0")
    assert v2["crates/othercrate"] == ("othercrate", "2.1.0")
    assert "" not in v1  # the root manifest is a workspace, not a package


def test_harvest_skips_test_code_and_excluded_folders_and_reuses_unchanged_blobs(built: Built) -> None:
    repository = GitRepository(built.repo.git_dir)
    cache = ecosystem_build.HarvestCache({})
    try:
        first, second = (harvest_release(repository, source, cache) for source in built.sources)
    finally:
        repository.close()
    assert {(s.file_path, s.message) for s in first.sites} == {
        ("crates/mycrate/src/lib.rs", OUT_OF_RANGE),
        ("crates/mycrate/src/lib.rs", OLD_SHAPE),
        ("crates/othercrate/src/lib.rs", MODEL_FILE),
    }
    assert {s.message for s in second.sites} == {OUT_OF_RANGE, NEW_SHAPE, MODEL_FILE}
    assert first.crates["crates/mycrate/src/lib.rs"] == ("mycrate", "0.1.0")
    assert second.crates["crates/othercrate/src/lib.rs"] == ("othercrate", "2.1.0")
    assert not any(path.startswith("crates/model-checks") for path in first.crates)
    # three files per release (integration tests and model checks never read); mycrate's tests.rs and
    # othercrate's lib.rs did not change, so the second release parses only mycrate's lib.rs
    assert (cache.parsed, cache.reused) == (4, 2)
    assert len(cache.found) == 4


# ---- the sources file ----------------------------------------------------------------------------------


def test_sources_file_round_trip(tmp_path: Path) -> None:
    sources = [
        Source(REPO, "v0.1.0", "a" * 40, "2024-01-01T10:00:00.000Z", ("crates",)),
        Source("gfx-rs/wgpu", "b" * 40, "b" * 40, "2024-02-01T10:00:00.000Z", ("wgpu", "wgpu-core")),
        Source('odd/"quoted"\\name', "v1", "c" * 40, "2024-03-01T10:00:00.000Z", ()),
    ]
    missing = [{"repo": "rust-ndarray/ndarray", "version": "0.15", "reason": "not in the local history"}]
    path = tmp_path / "sources.toml"
    write_sources(path, sources, missing)
    assert read_sources(path) == (sources, missing)
    first = path.read_bytes()
    write_sources(path, *read_sources(path))
    assert path.read_bytes() == first


# ---- build ---------------------------------------------------------------------------------------------


def test_two_builds_give_identical_bytes(built: Built, tmp_path: Path) -> None:
    again = tmp_path / "again"
    assert run_build(built.sources_file, again, None, [f"{REPO}={built.repo.git_dir}"]) == 0
    names = sorted(p.name for p in built.out.iterdir())
    assert set(OUTPUTS) <= set(names)
    assert sorted(p.name for p in again.iterdir()) == names  # no temporary file left behind
    for name in names:
        assert (again / name).read_bytes() == (built.out / name).read_bytes(), name
    # no file name or time inside the gzip header
    header = (built.out / OUTPUTS[0]).read_bytes()[:10]
    assert header[3] & 0x08 == 0  # FNAME
    assert header[4:8] == b"\0\0\0\0"  # MTIME


def test_build_into_a_folder_directly(built: Built, tmp_path: Path) -> None:
    repository = GitRepository(built.repo.git_dir)
    try:
        counts = build(built.sources, {REPO: repository}, tmp_path / "direct")
    finally:
        repository.close()
    assert counts["sources"] == 2
    assert counts["records"] == 4
    assert (tmp_path / "direct" / OUTPUTS[0]).read_bytes() == (built.out / OUTPUTS[0]).read_bytes()


def test_the_built_files_hold_records_sites_and_releases(built: Built) -> None:
    records = [line["record"] for line in read_jsonl_gz(built.out / OUTPUTS[0])]
    by_message = {r["errorMessage"]: r for r in records}
    assert set(by_message) == {OUT_OF_RANGE, OLD_SHAPE, NEW_SHAPE, MODEL_FILE}
    assert not SKIPPED_MESSAGES & set(by_message)
    newest = by_message[OUT_OF_RANGE]
    assert newest["lineNumber"] == V2_LINE
    assert newest["githubUrl"] == (
        f"https://github.com/{REPO}/blob/v0.2.0/crates/mycrate/src/lib.rs#L{V2_LINE}"
    )
    assert by_message[OLD_SHAPE]["githubUrl"].startswith(f"https://github.com/{REPO}/blob/v0.1.0/")
    releases = read_jsonl_gz(built.out / OUTPUTS[2])
    assert [(r["ref"], r["crates"]) for r in releases] == [
        ("v0.1.0", {"mycrate": "0.1.0", "othercrate": "2.0.0"}),
        ("v0.2.0", {"mycrate": "0.2.0", "othercrate": "2.1.0"}),
    ]
    sites = {row["id"]: row for row in read_jsonl_gz(built.out / OUTPUTS[1])}
    row = sites[newest["id"]]
    assert [(g["refs"], g["crate"], g["sites"][0]["line"]) for g in row["releases"]] == [
        (["v0.1.0"], "mycrate", V1_LINE),
        (["v0.2.0"], "mycrate", V2_LINE),
    ]


def test_the_api_table_holds_each_release_s_public_functions(built: Built) -> None:
    assert not (built.out / "ecosystem.api.jsonl.gz").exists()
    rows = [
        json.loads(line)
        for line in lzma.decompress((built.out / "ecosystem.api.jsonl.xz").read_bytes()).splitlines()
    ]
    # Library files only: no test module, no integration test, no excluded tool.
    assert sorted(row["filePath"] for row in rows) == [
        "crates/mycrate/src/lib.rs",
        "crates/othercrate/src/lib.rs",
    ]
    api = ApiTable(rows)
    first, second = api.release(REPO, "v0.1.0"), api.release(REPO, "v0.2.0")
    assert first is not None and second is not None
    [entry] = second.resolve(["mycrate", "checked"])
    [signature] = second.functions_of(entry)
    assert signature.params == (("index", "usize"), ("len", "usize"))
    assert first.resolve(["othercrate", "load"]) and second.resolve(["othercrate", "load"])
    assert first.resolve(["mycrate", "inline_tests", "inline"]) == []
    # Unchanged between the two releases: one version of the file, both refs.
    [other] = [row for row in rows if row["filePath"] == "crates/othercrate/src/lib.rs"]
    assert [v["refs"] for v in other["versions"]] == [["v0.1.0", "v0.2.0"]]


def test_a_message_taken_out_names_the_commit_that_did_it(built: Built) -> None:
    rows = read_jsonl_gz(built.out / "ecosystem.history.jsonl.gz")
    v2_sha = built.sources[1].sha
    old_shape = record_id(REPO, "crates/mycrate/src/lib.rs", OLD_SHAPE)
    assert rows == [
        {
            "id": old_shape,
            "repo": REPO,
            "lastRef": "v0.1.0",
            "goneRef": "v0.2.0",
            "commit": v2_sha[:10],
            "subject": SECOND_SUBJECT,
            "pullRequest": 42,
        }
    ]
    removal = load_catalog([built.out / OUTPUTS[0]]).releases.removal(old_shape)
    assert removal is not None and removal.pull_request == 42 and removal.gone_ref == "v0.2.0"
    assert removal.said == f'"{SECOND_SUBJECT}" ({v2_sha[:10]})'


# ---- loaded back: the catalog and the release-aware lookup --------------------------------------------


@pytest.fixture(scope="module")
def catalog(built: Built) -> Catalog:
    catalog = load_catalog([built.out / OUTPUTS[0]])
    assert catalog.errors == []
    return catalog


def test_the_catalog_loads_with_its_side_tables(catalog: Catalog) -> None:
    assert len(catalog.records) == 4
    table = catalog.releases
    assert [r.ref for r in table.releases[REPO]] == ["v0.1.0", "v0.2.0"]
    assert [r.crates for r in table.releases[REPO]] == [
        {"mycrate": "0.1.0", "othercrate": "2.0.0"},
        {"mycrate": "0.2.0", "othercrate": "2.1.0"},
    ]
    by_message = {r.errorMessage: r.id for r in catalog.records}
    moved = table.sites_of(by_message[OUT_OF_RANGE])
    assert [(s.release.ref, s.version, s.line, s.function) for s in moved] == [
        ("v0.1.0", "0.1.0", V1_LINE, "checked"),
        ("v0.2.0", "0.2.0", V2_LINE, "checked"),
    ]
    assert [s.release.ref for s in table.sites_of(by_message[OLD_SHAPE])] == ["v0.1.0"]
    gone = table.gone_since(by_message[OLD_SHAPE])
    assert gone is not None and gone.ref == "v0.2.0"
    assert [s.version for s in table.sites_of(by_message[MODEL_FILE])] == ["2.0.0", "2.1.0"]


def registry_paste(crate: str, version: str, line: int, message: str) -> str:
    path = f"/home/ana/.cargo/registry/src/{INDEX}/{crate}-{version}/src/lib.rs:{line}:9"
    return f"thread 'main' panicked at {path}:\n{message}\n{NOTE}"


def test_a_registry_path_of_the_first_release_answers_with_its_site(catalog: Catalog) -> None:
    lookup = PanicLookup(catalog)
    paste = registry_paste("mycrate", "0.1.0", V1_LINE, "index 7 out of range for length 3")
    result = lookup.lookup(paste)
    assert result.status == "matched"
    assert result.best is not None and result.best.record.errorMessage == OUT_OF_RANGE
    site = result_json(result, lookup.site(result))["site"]
    assert site["version"] == "0.1.0"
    assert site["release"] == "v0.1.0"
    assert site["crate"] == "mycrate"
    assert site["line"] == V1_LINE
    assert site["in_pasted_release"] is True
    assert site["url"] == f"https://github.com/{REPO}/blob/v0.1.0/crates/mycrate/src/lib.rs#L{V1_LINE}"
    assert site["gone_since"] is None


def test_a_registry_path_of_the_second_release_answers_with_its_line(catalog: Catalog) -> None:
    lookup = PanicLookup(catalog)
    result = lookup.lookup(registry_paste("mycrate", "0.2.0", V2_LINE, "index 9 out of range for length 1"))
    site = lookup.site(result)
    assert site is not None
    assert (site.version, site.release, site.line) == ("0.2.0", "v0.2.0", V2_LINE)


def test_a_message_reworded_since_says_since_when(catalog: Catalog) -> None:
    lookup = PanicLookup(catalog)
    line = line_of(V1_LIB, "assert_eq!")
    message = f"assertion `left == right` failed: {OLD_SHAPE}\n  left: [2, 3]\n right: [3, 2]"
    result = lookup.lookup(registry_paste("mycrate", "0.1.0", line, message))
    assert result.best is not None and result.best.record.errorMessage == OLD_SHAPE
    site = lookup.site(result)
    assert site is not None
    assert site.version == "0.1.0" and site.in_pasted_release is True
    assert site.gone_since == "0.2.0"
    assert "No longer raised since mycrate 0.2.0" in site.note
    card = lookup.card(result)
    assert card is not None and "No longer raised since" in card.release_note


# ---- the command ---------------------------------------------------------------------------------------


def test_build_with_a_missing_git_dir_exits_2_with_a_message(
    built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = [
        "catalog",
        "ecosystem",
        "build",
        "--sources",
        str(built.sources_file),
        "--git-dir",
        f"{REPO}={tmp_path / 'no-such-clone'}",
        "-o",
        str(out),
    ]
    assert main(argv, out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert f"no git directory for {REPO}" in err
    assert "--git-dir OWNER/NAME=PATH" in err
    assert not out.exists()


def test_build_with_a_malformed_git_dir_or_sources_file_exits_2(
    built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["catalog", "ecosystem", "build", "-o", str(tmp_path / "out")]
    assert main([*base, "--sources", str(built.sources_file), "--git-dir", REPO], out=io.StringIO()) == 2
    assert "OWNER/NAME=PATH" in capsys.readouterr().err
    missing = tmp_path / "nope.toml"
    assert main([*base, "--sources", str(missing), "--git-dir", f"{REPO}=x"], out=io.StringIO()) == 2
    assert "cannot read the sources" in capsys.readouterr().err


def test_the_command_builds_like_run_build(built: Built, tmp_path: Path) -> None:
    out = tmp_path / "cli"
    argv = ["catalog", "ecosystem", "build", "--sources", str(built.sources_file)]
    argv += ["--git-dir", f"{REPO}={built.repo.git_dir}", "-o", str(out)]
    assert main(argv, out=io.StringIO()) == 0
    for name in OUTPUTS:
        assert (out / name).read_bytes() == (built.out / name).read_bytes()


# ---- resolve_sources -----------------------------------------------------------------------------------


def test_resolve_sources_takes_burn_releases_from_0_3_and_no_book_tags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    burn = new_repo(tmp_path / "burn", tmp_path / "home")
    manifest = workspace_manifest("0.12.0") + '\n[workspace.dependencies]\nwgpu = "0.19"\n'
    lib = {"crates/burn-core/src/lib.rs": 'pub fn f() {\n    panic!("burn");\n}\n'}
    burn.commit("0.2", "2023-01-01T00:00:00+00:00", {"Cargo.toml": manifest}, tag="v0.2.0")
    burn.commit("0.12", "2024-01-01T00:00:00+00:00", lib, tag="v0.12.0")
    burn.commit(
        "0.13",
        "2024-04-01T00:00:00+00:00",
        {"Cargo.toml": manifest.replace("0.12.0", "0.13.0")},
        tag="v0.13.0",
    )
    burn.commit("book", "2024-04-02T00:00:00+00:00", {"burn-book/src/x.md": "# book\n"}, tag="v0.13.0-book")
    burn.commit(
        "0.14-pre",
        "2024-07-01T00:00:00+00:00",
        {"Cargo.toml": manifest.replace("0.12.0", "0.14.0-pre.1")},
        tag="v0.14.0-pre.1",
    )
    head = burn.commit("after", "2024-08-01T00:00:00+00:00", {"README.md": "burn\n"})
    # the data set's commit is always harvested: here, the newest commit of the fake history
    monkeypatch.setattr(ecosystem_build, "BURN_COMMIT", head)
    repository = GitRepository(burn.git_dir)
    try:
        sources, missing = resolve_sources({ecosystem_build.BURN: repository})
    finally:
        repository.close()
    assert [s.ref for s in sources] == ["v0.12.0", "v0.13.0", "v0.14.0-pre.1", head]
    assert {s.repo for s in sources} == {ecosystem_build.BURN}
    assert all((s.paths, s.path_prefix) == (("crates",), "") for s in sources)
    assert sources[1].date == "2024-04-01T00:00:00Z"
    assert sources[3].sha == head
    assert {m["repo"] for m in missing} >= {"tracel-ai/cubecl", "tracel-ai/cubek", "tracel-ai/burn-onnx"}
    assert {"repo": "gfx-rs/wgpu", "version": "0.19", "reason": "no git directory given"} in missing


def test_a_release_that_no_longer_has_the_message_says_where_it_is(catalog: Catalog) -> None:
    lookup = PanicLookup(catalog)
    line = line_of(V2_LIB, "assert_eq!")
    message = f"assertion `left == right` failed: {OLD_SHAPE}\n  left: [2, 3]\n right: [3, 2]"
    result = lookup.lookup(registry_paste("mycrate", "0.2.0", line, message))
    assert result.best is not None and result.best.record.errorMessage == OLD_SHAPE
    assert not result.auto_reply
    site = lookup.site(result)
    assert site is not None
    assert site.in_pasted_release is False
    assert site.note == "Not raised here in mycrate 0.2.0: this message is in 0.1.0."


def test_a_crate_with_its_own_version_is_told_apart_from_the_workspace(catalog: Catalog) -> None:
    lookup = PanicLookup(catalog)
    message = f'{MODEL_FILE}: Os {{ code: 2, kind: NotFound, message: "No such file or directory" }}'
    result = lookup.lookup(registry_paste("othercrate", "2.0.0", 2, message))
    assert result.best is not None and result.best.record.errorMessage == MODEL_FILE
    site = lookup.site(result)
    assert site is not None
    assert (site.crate, site.version, site.release, site.in_pasted_release) == (
        "othercrate",
        "2.0.0",
        "v0.1.0",
        True,
    )


def test_a_sources_file_naming_a_commit_the_clone_lacks_exits_1(
    built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = [Source(REPO, "v9.9.9", "0" * 40, "2030-01-01T00:00:00.000Z", ("crates",))]
    sources_file = tmp_path / "sources.toml"
    write_sources(sources_file, sources, [])
    out = tmp_path / "out"
    assert run_build(sources_file, out, None, [f"{REPO}={built.repo.git_dir}"]) == 1
    assert "0" * 40 in capsys.readouterr().err
    assert not (out / OUTPUTS[0]).exists()


# ---- Burn before v0.13: crates at the top level, filed under `crates/` --------------------------------

KEPT = "kept across the move to crates/"
DROPPED = "only in the top-level layout"
DROP_SUBJECT = "Drop the old check (#7)"
BURN_LIKE = "acme/burn"  # a git checkout of it is `burn-<hash>/<rev>/`, as Burn's is


def widgets_lib(dropped: bool) -> str:
    return f'pub fn kept(n: usize) {{\n    if n == 0 {{\n        panic!("{KEPT}");\n    }}\n}}\n' + (
        "" if dropped else f'\npub fn dropped() {{\n    panic!("{DROPPED}");\n}}\n'
    )


def widgets_manifest(version: str) -> str:
    return f'[package]\nname = "burn-widgets"\nversion = "{version}"\nedition = "2021"\n'


@dataclass
class Moved:
    repo: TinyRepo
    sources: list[Source]
    out: Path


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory) -> Moved:
    """A Burn-like history: v0.1.0 with its crate at the top level (`burn-widgets/`, beside a tool that is
    no Burn crate), the move under `crates/`, a commit that drops a message, then v0.2.0."""
    base = tmp_path_factory.mktemp("moved")
    repo = new_repo(base / "burn", base / "home")
    old = {
        "Cargo.toml": '[workspace]\nmembers = ["burn-widgets", "xtask"]\n',
        "burn-widgets/Cargo.toml": widgets_manifest("0.1.0"),
        "burn-widgets/src/lib.rs": widgets_lib(dropped=False),
        "xtask/Cargo.toml": '[package]\nname = "xtask"\nversion = "0.0.0"\n',
        "xtask/src/main.rs": 'fn main() {\n    panic!("xtask failed");\n}\n',
        "burn-book/src/x.md": "# book\n",
    }
    repo.commit("first", "2024-01-01T10:00:00+00:00", old, tag="v0.1.0")
    repo.commit(
        "Move the crates under crates/",
        "2024-02-01T10:00:00+00:00",
        {
            "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\n',
            "burn-widgets/Cargo.toml": None,
            "burn-widgets/src/lib.rs": None,
            "crates/burn-widgets/Cargo.toml": widgets_manifest("0.1.0"),
            "crates/burn-widgets/src/lib.rs": widgets_lib(dropped=False),
        },
    )
    repo.commit(
        DROP_SUBJECT, "2024-03-01T10:00:00+00:00", {"crates/burn-widgets/src/lib.rs": widgets_lib(True)}
    )
    repo.commit(
        "0.2.0",
        "2024-04-01T10:00:00+00:00",
        {"crates/burn-widgets/Cargo.toml": widgets_manifest("0.2.0")},
        tag="v0.2.0",
    )
    repository = GitRepository(repo.git_dir)
    try:
        sources = []
        for tag in ("v0.1.0", "v0.2.0"):
            sha, date = repository.commit(tag)
            sources.append(Source(BURN_LIKE, tag, sha, date, *ecosystem_build.burn_layout(repository, sha)))
    finally:
        repository.close()
    sources_file = base / "sources.toml"
    write_sources(sources_file, sources, [])
    assert read_sources(sources_file) == (sources, [])
    out = base / "out"
    assert run_build(sources_file, out, None, [f"{BURN_LIKE}={repo.git_dir}"]) == 0
    return Moved(repo, sources, out)


def test_a_release_with_its_crates_at_the_top_level_harvests_them_under_crates(moved: Moved) -> None:
    old, new = moved.sources
    # Only the Burn crates (a folder named burn* with a Cargo.toml): not the tool, not the book.
    assert (old.paths, old.path_prefix) == (("burn-widgets",), "crates/")
    assert (new.paths, new.path_prefix) == (("crates",), "")
    releases = read_jsonl_gz(moved.out / OUTPUTS[2])
    assert [(r["ref"], r.get("pathPrefix"), r["crates"]) for r in releases] == [
        ("v0.1.0", "crates/", {"burn-widgets": "0.1.0"}),
        ("v0.2.0", None, {"burn-widgets": "0.2.0"}),
    ]


def test_a_message_both_layouts_raise_is_one_record_with_the_id_of_its_crates_path(moved: Moved) -> None:
    path = "crates/burn-widgets/src/lib.rs"
    records = {
        line["record"]["errorMessage"]: line["record"] for line in read_jsonl_gz(moved.out / OUTPUTS[0])
    }
    assert set(records) == {KEPT, DROPPED}
    assert records[KEPT]["id"] == record_id(BURN_LIKE, path, KEPT)
    assert records[KEPT]["filePath"] == path
    sites = {row["id"]: row for row in read_jsonl_gz(moved.out / OUTPUTS[1])}
    assert [g["refs"] for g in sites[records[KEPT]["id"]]["releases"]] == [["v0.1.0", "v0.2.0"]]
    # A message only the old layout has: filed under crates/, linked where v0.1.0 has the file.
    dropped = records[DROPPED]
    assert dropped["id"] == record_id(BURN_LIKE, path, DROPPED) and dropped["filePath"] == path
    line = line_of(widgets_lib(dropped=False), DROPPED)
    assert (
        dropped["githubUrl"] == f"https://github.com/{BURN_LIKE}/blob/v0.1.0/burn-widgets/src/lib.rs#L{line}"
    )


def test_the_commit_that_dropped_a_message_after_the_move_is_found(moved: Moved) -> None:
    [row] = read_jsonl_gz(moved.out / "ecosystem.history.jsonl.gz")
    assert (row["lastRef"], row["goneRef"], row["subject"], row["pullRequest"]) == (
        "v0.1.0",
        "v0.2.0",
        DROP_SUBJECT,
        7,
    )


def test_a_paste_of_the_top_level_layout_gets_its_record_release_and_link(moved: Moved) -> None:
    catalog = load_catalog([moved.out / OUTPUTS[0]])
    lookup = PanicLookup(catalog)
    line = line_of(widgets_lib(dropped=False), DROPPED)
    for location in (
        f"/home/ana/.cargo/registry/src/{INDEX}/burn-widgets-0.1.0/src/lib.rs",
        f"/home/ana/.cargo/git/checkouts/burn-0123456789abcdef/{moved.sources[0].sha[:7]}/burn-widgets/src/lib.rs",
    ):
        result = lookup.lookup(f"thread 'main' panicked at {location}:{line}:9:\n{DROPPED}\n{NOTE}")
        assert result.best is not None and result.best.record.errorMessage == DROPPED, location
        site = lookup.site(result)
        assert site is not None
        assert (site.release, site.version, site.in_pasted_release) == ("v0.1.0", "0.1.0", True)
        assert site.file == "burn-widgets/src/lib.rs"
        assert site.url == f"https://github.com/{BURN_LIKE}/blob/v0.1.0/burn-widgets/src/lib.rs#L{line}"
        assert "0.2.0" in site.note  # gone since
    # lint: the record's link names the file where its release has it, which is no url-path error
    assert not [f for f in lint_catalog(catalog) if f.check == "url-path"]
