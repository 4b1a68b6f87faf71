"""Releases: the version a paste reveals (paths, Cargo.lock, Cargo.toml) and the side table that says which
release has a record's site, at which line."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.releases import (
    MAX_SCANNED_CHARS,
    CheckoutHint,
    Release,
    ReleaseTable,
    VersionHint,
    hint_from_path,
    hints_in_text,
    version_key,
)

CRATES_IO = "index.crates.io-1949cf8c6b5b557f"
CRATES_IO_OLD = "index.crates.io-6f17d22bba15001f"
TUNA = "mirrors.tuna.tsinghua.edu.cn-df7c3c540f42cdbd"
RSPROXY = "rsproxy.cn-0dccff568467c15b"


def path_hint(crate: str, version: str) -> VersionHint:
    return VersionHint(crate, version, True, "path")


# ---- hint_from_path -------------------------------------------------------------------------------------

PATH_HINTS: list[tuple[str, VersionHint | CheckoutHint | None]] = [
    # Linux, macOS, the old crates.io index name, with and without a line and column
    (
        f"/home/ana/.cargo/registry/src/{CRATES_IO}/burn-fusion-0.21.0/src/stream/store/index.rs",
        path_hint("burn-fusion", "0.21.0"),
    ),
    (
        f"/home/ana/.cargo/registry/src/{CRATES_IO}/burn-fusion-0.21.0/src/stream/store/index.rs:49:13",
        path_hint("burn-fusion", "0.21.0"),
    ),
    (
        f"/Users/dev/.cargo/registry/src/{CRATES_IO_OLD}/burn-core-0.16.0/src/module/base.rs",
        path_hint("burn-core", "0.16.0"),
    ),
    (
        f"~/.cargo/registry/src/{CRATES_IO}/burn-autodiff-0.19.1/src/ops/module.rs:915:9",
        path_hint("burn-autodiff", "0.19.1"),
    ),
    # Windows (backslashes, a drive), and a pre-release
    (
        f"C:\\Users\\jsmith\\.cargo\\registry\\src\\{CRATES_IO}\\burn-tensor-0.20.0-pre.3\\src\\tensor\\api\\check.rs",
        path_hint("burn-tensor", "0.20.0-pre.3"),
    ),
    (
        f"C:/Users/jsmith/.cargo/registry/src/{CRATES_IO}/burn-ndarray-0.17.0/src/ops/tensor.rs:12:5",
        path_hint("burn-ndarray", "0.17.0"),
    ),
    # Mirrors: the index folder holds dots, dashes and hex, never a crate
    (
        f"/home/u/.cargo/registry/src/{TUNA}/wgpu-core-22.1.0/src/device/mod.rs",
        path_hint("wgpu-core", "22.1.0"),
    ),
    (
        f"/root/.cargo/registry/src/{RSPROXY}/ndarray-0.15.6/src/impl_methods.rs",
        path_hint("ndarray", "0.15.6"),
    ),
    # Crates with digits in their names
    (
        f"/home/u/.cargo/registry/src/{CRATES_IO}/cubecl-wgpu-0.4.0/src/lib.rs",
        path_hint("cubecl-wgpu", "0.4.0"),
    ),
    (f"/home/u/.cargo/registry/src/{CRATES_IO}/half-2.4.1/src/binary16.rs", path_hint("half", "2.4.1")),
    (f"/home/u/.cargo/registry/src/{CRATES_IO}/sha2-0.10.8/src/core_api.rs", path_hint("sha2", "0.10.8")),
    # Build metadata is not part of the version
    (
        f"/home/u/.cargo/registry/src/{CRATES_IO}/burn-core-0.16.0+local/src/x.rs",
        path_hint("burn-core", "0.16.0"),
    ),
    # Vendored sources
    ("vendor/burn-core-0.16.0/src/module/param.rs", path_hint("burn-core", "0.16.0")),
    ("/build/app/vendor/burn-train-0.18.0/src/learner/base.rs:88:14", path_hint("burn-train", "0.18.0")),
    # Git checkouts: the repository's name and the short sha
    (
        "/home/u/.cargo/git/checkouts/burn-178c6829f420dae1/2c06be3/crates/burn-core/src/module/base.rs:10:5",
        CheckoutHint("burn", "2c06be3"),
    ),
    (
        "C:\\Users\\u\\.cargo\\git\\checkouts\\cubecl-aa11bb22cc33dd44\\a1b2c3d\\crates\\x\\src\\lib.rs",
        CheckoutHint("cubecl", "a1b2c3d"),
    ),
    (
        "/home/u/.cargo/git/checkouts/tch-rs-0123456789abcdef/9056bd7/src/tensor/mod.rs",
        CheckoutHint("tch-rs", "9056bd7"),
    ),
    # The index of the old registry layout
    (
        "/home/u/.cargo/registry/src/github.com-1ecc6299db9ec823/burn-tensor-0.9.0/src/tensor/base.rs",
        path_hint("burn-tensor", "0.9.0"),
    ),
    # No version anywhere
    ("vendor/burn-core/src/module/param.rs", None),
    ("crates/burn-core/src/module/base.rs", None),
    ("src/main.rs", None),
    ("/home/u/src/burn/crates/burn-tensor/src/tensor/api/base.rs:100:9", None),
    ("/rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/core/src/ops/function.rs:250:5", None),
    (f"/home/u/.cargo/registry/src/{CRATES_IO}/", None),
    ("/home/u/.cargo/git/checkouts/burn-178c6829f420dae1/", None),
    ("", None),
]


@pytest.mark.parametrize(("raw", "expected"), PATH_HINTS)
def test_hint_from_path(raw: str, expected: VersionHint | CheckoutHint | None) -> None:
    assert hint_from_path(raw) == expected


def test_the_innermost_crate_folder_names_the_crate() -> None:
    """A vendored crate inside a project that itself has a version in its folder name."""
    hint = hint_from_path("/work/app-1.2.3/vendor/burn-core-0.16.0/src/lib.rs")
    assert hint == path_hint("burn-core", "0.16.0")


@pytest.mark.parametrize(
    ("raw", "crate", "version"),
    [
        (f"/home/u/.cargo/registry/src/{CRATES_IO}/x86_64-0.15.1/src/lib.rs", "x86_64", "0.15.1"),
        (f"/home/u/.cargo/registry/src/{CRATES_IO}/serde_json-1.0.108/src/de.rs", "serde_json", "1.0.108"),
        (f"C:\\c\\registry\\src\\{CRATES_IO}\\my_crate2-0.2.0-rc.1\\src\\x.rs", "my_crate2", "0.2.0-rc.1"),
    ],
)
def test_a_crate_with_underscores_keeps_its_name_up_to_cargos_dash_underscore_equivalence(
    raw: str, crate: str, version: str
) -> None:
    hint = hint_from_path(raw)
    assert isinstance(hint, VersionHint)
    assert hint.crate.replace("_", "-") == crate.replace("_", "-")
    assert (hint.version, hint.exact, hint.source) == (version, True, "path")


# ---- hints_in_text --------------------------------------------------------------------------------------

CARGO_LOCK = """\
# This file is automatically @generated by Cargo.
# It is not intended for manual editing.
version = 4

[[package]]
name = "burn-core"
version = "0.16.0"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "8d7d2b0c0a3f1b5e4a2c9e1f0d3b6a7c8e9f0a1b2c3d4e5f60718293a4b5c6d7"
dependencies = [
 "burn-common",
 "burn-tensor",
]

[[package]]
name = "burn-tensor"
version = "0.20.0-pre.3"
source = "registry+https://github.com/rust-lang/crates.io-index"

[[package]]
name = "cubecl"
version = "0.4.0"
source = "git+https://github.com/tracel-ai/cubecl?rev=a1b2c3d#a1b2c3d4e5f6"
"""


def test_a_cargo_lock_excerpt_gives_exact_versions() -> None:
    assert hints_in_text(CARGO_LOCK) == [
        VersionHint("burn-core", "0.16.0", True, "lock"),
        VersionHint("burn-tensor", "0.20.0-pre.3", True, "lock"),
        VersionHint("cubecl", "0.4.0", True, "lock"),
    ]


def test_a_cargo_lock_with_windows_line_ends() -> None:
    text = CARGO_LOCK.replace("\n", "\r\n")
    assert [(h.crate, h.version) for h in hints_in_text(text)] == [
        ("burn-core", "0.16.0"),
        ("burn-tensor", "0.20.0-pre.3"),
        ("cubecl", "0.4.0"),
    ]


MANIFEST = """\
[package]
edition = "2021"
rust-version = "1.80"

[dependencies]
burn = "0.16"
burn-ndarray = { version = "=0.20.0-pre.3", features = ["std"] }
burn-wgpu = { version = "^0.17.1", default-features = false }
cubecl = { git = "https://github.com/tracel-ai/cubecl", rev = "a1b2c3d" }
burn-import = { path = "../burn/crates/burn-import" }
tch = "~0.15.0"
serde = { version = "1", features = ["derive"] }
"""


def test_cargo_toml_dependency_lines() -> None:
    assert hints_in_text(MANIFEST) == [
        VersionHint("burn", "0.16", False, "manifest"),
        VersionHint("burn-ndarray", "0.20.0-pre.3", True, "manifest"),
        VersionHint("burn-wgpu", "0.17.1", False, "manifest"),
        VersionHint("tch", "0.15.0", False, "manifest"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        'version = "0.16.0"',
        '[workspace.package]\nversion = "0.21.0"\nedition = "2021"\n',
        'edition = "2021"\nrust-version = "1.85"',
        'burn = { git = "https://github.com/tracel-ai/burn", branch = "main" }',
        'burn = { path = "../burn/crates/burn" }',
        "burn = { workspace = true }",
        'description = "version 0.16.0 of it"',
        'name = "burn"',  # a lock entry cut before its version
        'name = "burn"\n\nsomething = 1\nversion = "0.16.0"',  # not one entry
        "thread 'main' panicked at src/main.rs:3:5:\nversion mismatch: 0.16 vs 0.17",
    ],
)
def test_lines_that_declare_no_dependency_version_give_nothing(text: str) -> None:
    assert hints_in_text(text) == []


def test_the_scan_stops_at_max_scanned_chars() -> None:
    far = "x" * MAX_SCANNED_CHARS + '\nburn = "0.16"\n'
    assert hints_in_text(far) == []
    assert hints_in_text('burn = "0.16"\n' + far) == [VersionHint("burn", "0.16", False, "manifest")]


# ---- version_key ----------------------------------------------------------------------------------------


def test_version_order() -> None:
    ordered = [
        "0.13.0",
        "0.19.4",
        "0.20.0-pre.1",
        "0.20.0-pre.3",
        "0.20.0",
        "0.20.1",
        "v0.21.0",
        "1.0.0-rc.1",
        "1.0.0",
        "22.1.0",
        "wgpu-v24.0.0",
    ]
    shuffled = ordered[::2] + ordered[1::2][::-1]
    assert sorted(shuffled, key=version_key) == ordered
    assert version_key("22.1.0") > version_key("0.19.4")
    assert version_key("0.20.0-pre.6") < version_key("0.20.0")
    assert version_key("0.16") == version_key("0.16.0")


def test_pre_release_numbers_compare_as_numbers() -> None:
    assert version_key("0.20.0-pre.2") < version_key("0.20.0-pre.10")


def test_a_text_without_a_version_sorts_first() -> None:
    assert version_key("main") < version_key("0.0.1")


# ---- hypothesis: never raise, no catastrophic backtracking ---------------------------------------------

PATHY = st.text(alphabet=st.sampled_from('abz09-_./\\:+~ \n\t"={}'), max_size=300)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), PATHY))
def test_hint_from_path_never_raises(raw: str) -> None:
    hint = hint_from_path(raw)
    if isinstance(hint, VersionHint):
        assert hint.crate
        assert hint.crate in raw.lower().replace("_", "-") or hint.crate in raw.lower()
        assert hint.version in raw
        assert version_key(hint.version)[0] >= 0
    elif isinstance(hint, CheckoutHint):
        assert hint.name and len(hint.rev) >= 7
    else:
        assert hint is None


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), PATHY))
def test_hints_in_text_never_raises(text: str) -> None:
    for hint in hints_in_text(text):
        assert isinstance(hint, VersionHint)
        assert hint.source in ("lock", "manifest")
        if hint.source == "manifest":
            assert hint.crate not in ("version", "name", "edition", "rust-version")
        assert version_key(hint.version)[0] >= 0


ADVERSARIAL_SIZE = 200_000
ADVERSARIAL = {
    # a lock entry's name followed by a long run of blank lines before a word `version`
    "lock-newlines": 'name = "a"' + "\n" * ADVERSARIAL_SIZE + "version",
    "lock-spaced-newlines": 'name = "a"' + " \n" * (ADVERSARIAL_SIZE // 2) + 'version = "x',
    "lock-names": 'name = "a"\n' * (ADVERSARIAL_SIZE // 11 + 1) + "version",
    "name-spaces": "name" + " " * ADVERSARIAL_SIZE + "version",
    "dependency-table": "a = {" + " version =" * (ADVERSARIAL_SIZE // 10),
    "dependency-spaces": "a" + " \t" * (ADVERSARIAL_SIZE // 2) + "= version",
    "crate-dashes": "/" + "a-" * (ADVERSARIAL_SIZE // 2),
    "crate-versions": "/a-" + "1.1.1-" * (ADVERSARIAL_SIZE // 6),
    "windows-versions": "\\a-" + "1.1.1-" * (ADVERSARIAL_SIZE // 6),
    "checkouts": "git/checkouts/" + "a-aaaaaaaa" * (ADVERSARIAL_SIZE // 10),
    "checkout-hex": "git/checkouts/a-" + "0" * ADVERSARIAL_SIZE,
    "slashes": "/" * ADVERSARIAL_SIZE,
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial_200kb_inputs_return(name: str) -> None:
    """Each regex here meets these strings in one pass: were one to backtrack over the whole run (the
    lock entry's whitespace once did), this test would take minutes instead of milliseconds."""
    text = ADVERSARIAL[name]
    assert len(text) >= ADVERSARIAL_SIZE
    assert hints_in_text(text) == []
    assert hint_from_path(text) is None


# ---- ReleaseTable ---------------------------------------------------------------------------------------

BURN = "tracel-ai/burn"
WGPU = "gfx-rs/wgpu"
NDARRAY = "rust-ndarray/ndarray"
AFTER_0161 = "abcdef1234567890abcdef1234567890abcdef12"


def release_row(
    repo: str, ref: str, date: str, crates: dict[str, str], sha: str | None = None
) -> dict[str, Any]:
    sha = sha or hashlib.sha1(f"{repo}@{ref}".encode()).hexdigest()
    return {"repo": repo, "ref": ref, "sha": sha, "date": date, "crates": crates}


def burn_crates(version: str) -> dict[str, str]:
    return {"burn": version, "burn-core": version, "burn-tensor": version}


RELEASE_ROWS = [
    # listed out of order: the table orders a repository's releases by date
    release_row(BURN, "v0.16.1", "2025-03-01T00:00:00Z", burn_crates("0.16.1"), sha="1" * 40),
    release_row(BURN, "v0.15.0", "2024-10-01T00:00:00Z", burn_crates("0.15.0"), sha="2" * 40),
    release_row(BURN, "v0.16.0", "2025-01-01T00:00:00Z", burn_crates("0.16.0"), sha="3" * 40),
    release_row(BURN, AFTER_0161, "2025-04-01T00:00:00Z", burn_crates("0.16.1"), sha=AFTER_0161),
    release_row(BURN, "v0.17.0-pre.1", "2025-05-01T00:00:00Z", burn_crates("0.17.0-pre.1"), sha="4" * 40),
    release_row(
        WGPU, "v22.1.0", "2024-07-01T00:00:00Z", {"wgpu": "22.1.0", "wgpu-core": "22.1.0"}, sha="5" * 40
    ),
    release_row(NDARRAY, "0.15.6", "2022-07-01T00:00:00Z", {"ndarray": "0.15.6"}, sha="6" * 40),
    release_row(NDARRAY, "0.16.1", "2024-08-01T00:00:00Z", {"ndarray": "0.16.1"}, sha="7" * 40),
]

MODULE_BASE = "crates/burn-core/src/module/base.rs"


def group(refs: list[str], crate: str, line: int, **site: Any) -> dict[str, Any]:
    return {"refs": refs, "crate": crate, "sites": [{"line": line, "column": 9, "kind": "panic", **site}]}


SITE_ROWS = [
    {
        "id": "moved",
        "repo": BURN,
        "filePath": MODULE_BASE,
        # newest group first: the table orders sites by release
        "releases": [
            group(["v0.16.1", AFTER_0161, "v0.17.0-pre.1"], "burn-core", 120, function="load_record"),
            group(["v0.15.0", "v0.16.0"], "burn-core", 100, function="load_record", impl="Param"),
        ],
    },
    {
        "id": "gone",
        "repo": BURN,
        "filePath": MODULE_BASE,
        "releases": [group(["v0.15.0", "v0.16.0"], "burn-core", 200)],
    },
    {
        "id": "wgpu-device",
        "repo": WGPU,
        "filePath": "wgpu-core/src/device/mod.rs",
        "releases": [group(["v22.1.0"], "wgpu-core", 3000)],
    },
    {
        "id": "nd-index",
        "repo": NDARRAY,
        "filePath": "src/impl_methods.rs",
        "releases": [group(["0.15.6", "0.16.1"], "ndarray", 700)],
    },
    # rows the table skips: no id, no release groups, a ref no release row names
    {"repo": BURN, "filePath": MODULE_BASE, "releases": [group(["v0.15.0"], "burn-core", 1)]},
    {"id": "single-release", "repo": BURN, "filePath": "x.rs", "function": "f"},
    {"id": "unknown-ref", "repo": BURN, "filePath": "y.rs", "releases": [group(["v9.9.9"], "burn-core", 5)]},
]


@pytest.fixture
def table() -> ReleaseTable:
    table = ReleaseTable()
    assert not table
    table.add_release_rows(RELEASE_ROWS)
    table.add_site_rows(SITE_ROWS)
    assert table
    return table


def refs(releases: list[Release]) -> list[str]:
    return [release.ref for release in releases]


def test_releases_are_ordered_by_date_per_repository(table: ReleaseTable) -> None:
    assert refs(table.releases[BURN]) == ["v0.15.0", "v0.16.0", "v0.16.1", AFTER_0161, "v0.17.0-pre.1"]
    assert [r.order for r in table.releases[BURN]] == [0, 1, 2, 3, 4]
    commit = table.releases[BURN][3]
    assert not commit.is_tag and commit.name == AFTER_0161[:10]
    assert table.releases[BURN][0].is_tag and table.releases[BURN][0].name == "v0.15.0"
    assert table.repos_by_crate["wgpu-core"] == {WGPU}


def test_adding_release_rows_again_replaces_a_ref_and_keeps_the_order(table: ReleaseTable) -> None:
    table.add_release_rows([release_row(BURN, "v0.14.0", "2024-06-01T00:00:00Z", burn_crates("0.14.0"))])
    assert refs(table.releases[BURN])[:2] == ["v0.14.0", "v0.15.0"]
    assert [r.order for r in table.releases[BURN]] == list(range(6))


def test_an_exact_version_shared_by_a_tag_and_a_later_commit_names_the_tag_first(table: ReleaseTable) -> None:
    hint = path_hint("burn-core", "0.16.1")
    assert refs(table.candidates(BURN, "burn-core", [hint])) == ["v0.16.1", AFTER_0161]
    resolved = table.resolve(BURN, "burn-core", [hint])
    assert resolved is not None and resolved.ref == "v0.16.1"


def test_a_pre_release_is_its_own_version(table: ReleaseTable) -> None:
    hint = path_hint("burn-tensor", "0.17.0-pre.1")
    assert refs(table.candidates(BURN, "burn-tensor", [hint])) == ["v0.17.0-pre.1"]


def test_a_requirement_takes_the_newest_release_of_that_minor_version(table: ReleaseTable) -> None:
    hint = VersionHint("burn", "0.16", False, "manifest")
    assert refs(table.candidates(BURN, "burn-core", [hint])) == ["v0.16.1", "v0.16.0", AFTER_0161]
    resolved = table.resolve(BURN, "burn-core", [hint])
    assert resolved is not None and resolved.ref == "v0.16.1"


def test_a_requirement_with_a_patch_takes_that_patch_or_newer(table: ReleaseTable) -> None:
    hint = VersionHint("burn-core", "0.16.1", False, "manifest")
    assert refs(table.candidates(BURN, "burn-core", [hint])) == ["v0.16.1", AFTER_0161]


def test_a_checkout_short_sha_names_that_commit(table: ReleaseTable) -> None:
    hint = CheckoutHint("burn", AFTER_0161[:7])
    assert refs(table.candidates(BURN, "burn-core", [hint])) == [AFTER_0161]
    # another repository's checkout, or a sha not harvested, names nothing
    assert table.candidates(BURN, "burn-core", [CheckoutHint("cubecl", AFTER_0161[:7])]) == []
    assert table.candidates(BURN, "burn-core", [CheckoutHint("burn", "0000000")]) == []


def test_candidates_asked_again_follow_release_rows_added_since(table: ReleaseTable) -> None:
    # Each match of a lookup asks with the same hints: the answer is kept, but never past a change of the
    # repository's releases.
    hint = path_hint("burn-core", "0.18.0")
    assert table.candidates(BURN, "burn-core", [hint]) == []
    answer = table.candidates(BURN, "burn-core", [path_hint("burn-core", "0.16.1")])
    answer.clear()  # a caller's list is its own
    assert refs(table.candidates(BURN, "burn-core", [path_hint("burn-core", "0.16.1")])) == [
        "v0.16.1",
        AFTER_0161,
    ]
    table.add_release_rows([release_row(BURN, "v0.18.0", "2025-07-01T00:00:00Z", burn_crates("0.18.0"))])
    assert refs(table.candidates(BURN, "burn-core", [hint])) == ["v0.18.0"]


def test_candidates_asked_for_another_crate_of_the_repository_are_its_own(table: ReleaseTable) -> None:
    # A hint naming the repository (`toolkit = "1.0.0"`) reads as the version of the record's crate: the
    # answer kept for one crate is not the other's.
    toolkit = "acme/toolkit"
    table.add_release_rows(
        [
            release_row(
                toolkit, "v1", "2025-01-01T00:00:00Z", {"toolkit-core": "1.0.0", "toolkit-io": "0.9.0"}
            ),
            release_row(
                toolkit, "v2", "2025-02-01T00:00:00Z", {"toolkit-core": "1.1.0", "toolkit-io": "1.0.0"}
            ),
        ]
    )
    hint = VersionHint("toolkit", "1.0.0", True, "manifest")
    for _ in range(2):
        assert refs(table.candidates(toolkit, "toolkit-core", [hint])) == ["v1"]
        assert refs(table.candidates(toolkit, "toolkit-io", [hint])) == ["v2"]


def test_candidates_kept_start_again_past_their_bound(
    table: ReleaseTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bot.releases.CANDIDATES_KEPT", 2)
    asked = [path_hint("burn-core", version) for version in ("0.15.0", "0.16.0", "0.16.1", "0.17.0-pre.1")]
    want = [["v0.15.0"], ["v0.16.0"], ["v0.16.1", AFTER_0161], ["v0.17.0-pre.1"]]
    for _ in range(2):
        for hint, expected in zip(asked, want, strict=True):
            assert refs(table.candidates(BURN, "burn-core", [hint])) == expected
            assert len(table._candidates) <= 2


def test_a_hint_naming_another_repositorys_crate_gives_no_candidates(table: ReleaseTable) -> None:
    wgpu_hint = path_hint("wgpu-core", "22.1.0")
    assert table.candidates(BURN, "burn-core", [wgpu_hint]) == []
    assert refs(table.candidates(WGPU, "wgpu-core", [wgpu_hint])) == ["v22.1.0"]
    # the first hint that names one of the repository's crates decides
    hints = [wgpu_hint, path_hint("burn-core", "0.15.0"), path_hint("burn-core", "0.16.0")]
    assert refs(table.candidates(BURN, "burn-core", hints)) == ["v0.15.0"]


def test_a_version_not_harvested_and_an_unknown_repository_give_no_candidates(table: ReleaseTable) -> None:
    assert table.candidates(BURN, "burn-core", [path_hint("burn-core", "0.14.0")]) == []
    assert table.candidates("someone/else", None, [path_hint("burn-core", "0.16.0")]) == []
    assert table.resolve(BURN, "burn-core", []) is None


def test_crate_names_match_up_to_dash_and_underscore() -> None:
    """Cargo treats `serde_json` and `serde-json` as one name: a registry path of a crate with an
    underscore finds its release whichever spelling the hint keeps."""
    table = ReleaseTable()
    table.add_release_rows(
        [release_row("serde-rs/json", "v1.0.108", "2023-10-01", {"serde_json": "1.0.108"})]
    )
    hint = hint_from_path(f"/home/u/.cargo/registry/src/{CRATES_IO}/serde_json-1.0.108/src/de.rs")
    assert isinstance(hint, VersionHint)
    assert refs(table.candidates("serde-rs/json", "serde_json", [hint])) == ["v1.0.108"]


def test_sites_are_ordered_by_release_and_carry_their_facts(table: ReleaseTable) -> None:
    sites = table.sites_of("moved")
    assert [(s.release.ref, s.line) for s in sites] == [
        ("v0.15.0", 100),
        ("v0.16.0", 100),
        ("v0.16.1", 120),
        (AFTER_0161, 120),
        ("v0.17.0-pre.1", 120),
    ]
    first = sites[0]
    assert (first.crate, first.column, first.kind, first.function, first.impl_type) == (
        "burn-core",
        9,
        "panic",
        "load_record",
        "Param",
    )
    assert first.version == "0.15.0"
    assert sites[-1].version == "0.17.0-pre.1"
    newest = table.newest_site("moved")
    assert newest is not None and newest.release.ref == "v0.17.0-pre.1"


def test_the_newest_site_is_the_first_of_the_newest_release_in_file_order(table: ReleaseTable) -> None:
    # A message raised at three lines of the file in the newest release: the first of them, whatever the
    # number of older sites before it.
    newest_group = {
        "refs": ["v0.17.0-pre.1"],
        "crate": "burn-core",
        "sites": [{"line": line, "kind": "panic"} for line in (300, 150, 400)],
    }
    older = [group([ref], "burn-core", 90 + order) for order, ref in enumerate(["v0.15.0", "v0.16.0"])]
    table.add_site_rows(
        [{"id": "thrice", "repo": BURN, "filePath": MODULE_BASE, "releases": [newest_group, *older]}]
    )
    newest = table.newest_site("thrice")
    assert newest is not None and (newest.release.ref, newest.line) == ("v0.17.0-pre.1", 300)


def test_site_in_takes_a_release_equal_to_the_sites_own_not_only_the_same_object(table: ReleaseTable) -> None:
    given = [dataclasses.replace(release) for release in table.releases[BURN] if release.ref == "v0.16.0"]
    assert given[0] is not table.sites_of("moved")[1].release
    found = table.site_in("moved", given)
    assert found is not None and (found.release.ref, found.line) == ("v0.16.0", 100)
    # equal refs are not enough: a release with other fields is another release
    other = [dataclasses.replace(given[0], sha="f" * 40)]
    assert table.site_in("moved", other) is None


def test_rows_without_an_id_or_release_groups_or_known_refs_add_no_site(table: ReleaseTable) -> None:
    assert {record for record, sites in table.sites.items() if sites} == {
        "moved",
        "gone",
        "wgpu-device",
        "nd-index",
    }
    assert not table.sites_of("unknown-ref")
    assert not table.sites_of("single-release")
    assert table.newest_site("single-release") is None
    assert table.newest_site("unknown-ref") is None


def test_site_in_the_first_release_that_has_it(table: ReleaseTable) -> None:
    by_ref = {release.ref: release for release in table.releases[BURN]}
    at_0161 = table.site_in("moved", [by_ref["v0.16.1"], by_ref[AFTER_0161]])
    assert at_0161 is not None and (at_0161.release.ref, at_0161.line) == ("v0.16.1", 120)
    at_0150 = table.site_in("moved", [by_ref["v0.15.0"]])
    assert at_0150 is not None and at_0150.line == 100
    assert table.site_in("gone", [by_ref["v0.16.1"], by_ref[AFTER_0161]]) is None
    # the first release given that has the site, not the first site
    later_first = table.site_in("gone", [by_ref["v0.17.0-pre.1"], by_ref["v0.16.0"], by_ref["v0.15.0"]])
    assert later_first is not None and later_first.release.ref == "v0.16.0"
    assert table.site_in("no-such-record", [by_ref["v0.15.0"]]) is None


def test_gone_since_is_the_first_release_after_the_newest_with_the_site(table: ReleaseTable) -> None:
    gone = table.gone_since("gone")
    assert gone is not None and gone.ref == "v0.16.1"
    assert gone.crate_version("burn-core") == "0.16.1"
    assert table.gone_since("moved") is None  # still in the newest release
    assert table.gone_since("nd-index") is None
    assert table.gone_since("no-such-record") is None


def test_alias_hands_the_covered_records_releases_to_the_analysed_one(table: ReleaseTable) -> None:
    table.alias("analysed", "moved")
    assert table.sites_of("analysed") == table.sites_of("moved")
    assert len(table.sites_of("analysed")) == 5
    # an analysed record with sites of its own keeps them; a covered record without sites gives nothing
    table.alias("gone", "moved")
    assert len(table.sites_of("gone")) == 2
    table.alias("other", "no-such-record")
    assert table.sites_of("other") == ()


def test_records_at_a_pasted_path(table: ReleaseTable) -> None:
    assert table.records_at(MODULE_BASE) == ["moved", "gone"]
    # wgpu's crates sit at the repository root: `crates/wgpu-core/...` from a registry path is `wgpu-core/...`
    assert table.records_at("crates/wgpu-core/src/device/mod.rs") == ["wgpu-device"]
    # a root crate: `crates/ndarray/src/x.rs` is `src/x.rs`, when the pasted crate is that folder
    assert table.records_at("crates/ndarray/src/impl_methods.rs") == ["nd-index"]
    assert table.records_at("crates/ndarray/src/impl_methods.rs", "ndarray") == ["nd-index"]
    assert table.records_at("crates/other/src/impl_methods.rs", "ndarray") == []
    assert table.records_at("src/impl_methods.rs") == ["nd-index"]
    assert table.records_at("crates/burn-core/src/module/param.rs") == []
    assert table.records_at("") == []
