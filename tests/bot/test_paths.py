"""Paths as users have them become repository paths."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.paths import canonical_path, common_suffix_length, path_parts

TARGET = "crates/burn-autodiff/src/ops/module.rs"


@pytest.mark.parametrize(
    "raw",
    [
        TARGET,
        f"/home/ana/src/burn/{TARGET}",
        "/home/ana/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/burn-autodiff-0.19.0/src/ops/module.rs",
        "/root/.cargo/registry/src/mirrors.tuna.tsinghua.edu.cn-df7c3c540f42cdbd/burn-autodiff-0.20.0-pre.1/"
        "src/ops/module.rs",
        "~/.cargo/registry/src/index.crates.io-6f17d22bba15001f/burn-autodiff-0.19.0/src/ops/module.rs",
        f"/home/ana/.cargo/git/checkouts/burn-178c6829e5d8c7a0/2c06be3/{TARGET}",
        "C:\\Users\\Ana\\.cargo\\registry\\src\\index.crates.io-6f17d22bba15001f\\burn-autodiff-0.19.0\\src\\ops"
        "\\module.rs",
        "~\\crates\\burn-autodiff\\src\\ops\\module.rs",
        "C:\\Users\\me\\burn/crates/burn-autodiff/src\\ops\\module.rs",
        f"/work/crates/my-app/vendor/burn/{TARGET}",
        "/src/vendor/burn-autodiff/src/ops/module.rs",
    ],
)
def test_every_shape_becomes_the_repository_path(raw: str) -> None:
    assert canonical_path(raw) == TARGET


def test_paths_outside_a_repository_stay_recognisable() -> None:
    assert canonical_path("src/ops/module.rs") == "src/ops/module.rs"
    assert canonical_path("./src/main.rs") == "src/main.rs"
    std_path = "/rustc/abc/library/core/src/panicking.rs"
    assert canonical_path(std_path) == std_path


def test_common_suffix_length() -> None:
    assert common_suffix_length(path_parts("src/ops/module.rs"), path_parts(TARGET)) == 3
    assert common_suffix_length(path_parts("a/b.rs"), path_parts("c/d.rs")) == 0


@given(st.text())
def test_canonical_path_never_raises(raw: str) -> None:
    assert isinstance(canonical_path(raw), str)


def test_a_path_pasted_from_its_crate_folder_on_gets_its_crates_folder() -> None:
    assert canonical_path("cubecl-std/src/fast_math.rs") == "crates/cubecl-std/src/fast_math.rs"
    assert canonical_path("burn-fusion/src/stream/execution/ordering.rs") == (
        "crates/burn-fusion/src/stream/execution/ordering.rs"
    )
    assert canonical_path("./burn-fusion\\src\\client.rs") == "crates/burn-fusion/src/client.rs"
    # Only a dashed lowercase crate name followed by `src/`, at the start of a relative path.
    for kept in (
        "burn/src/lib.rs",
        "my_app/src/main.rs",
        "Burn-X/src/a.rs",
        "burn-fusion/tests/a.rs",
        "/burn-fusion/src/a.rs",
        "x/burn-fusion/src/a.rs",
        "-burn/src/a.rs",
    ):
        assert canonical_path(kept) == kept


@pytest.mark.parametrize(
    "raw",
    [
        "/home/ana/burn/burn-tensor/src/tensor/shape.rs",
        "C:\\Users\\ana\\burn\\burn-tensor\\src\\tensor\\shape.rs",
        "/home/ana/.cargo/git/checkouts/burn-178c6829e5d8c7a0/df95fc3/burn-tensor/src/tensor/shape.rs",
        "/home/ana/.cargo/registry/src/index.crates.io-6f17d22bba15001f/burn-tensor-0.3.0/src/tensor/shape.rs",
    ],
)
def test_burn_s_top_level_crates_of_before_0_13_get_their_crates_folder(raw: str) -> None:
    assert canonical_path(raw) == "crates/burn-tensor/src/tensor/shape.rs"


def test_only_a_burn_checkout_s_burn_crates_are_moved_under_crates() -> None:
    for kept in (
        "/home/ana/burn-demo/src/main.rs",  # a project of one's own named burn-something
        "/home/ana/burn/examples/mnist/src/main.rs",
        "/home/ana/myburn/burn-x/src/a.rs",
        "/home/ana/.cargo/git/checkouts/wgpu-178c6829e5d8c7a0/df95fc3/wgpu-core/src/lib.rs",
    ):
        assert canonical_path(kept) == kept
