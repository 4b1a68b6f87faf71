"""A release's public API read from Rust files, and paths resolved through its modules and re-exports."""

from __future__ import annotations

from typing import Any

from bot.api_surface import read_file_api
from bot.api_table import ApiTable

LIB = """
mod tensor;
pub mod backend;
pub use tensor::*;
pub use other_crate as other;
#[cfg(test)]
mod tests { pub fn hidden() {} }
"""
TENSOR = """
pub mod module;
mod api;
pub use api::{Tensor, DType::{self}, Shape as Dims};
"""
API = """
pub struct Tensor<B, const D: usize> { x: B }
pub enum DType { F32, F64, QFloat(u8) }
pub struct Shape;
impl<B, const D: usize> Tensor<B, D> {
    pub fn reshape<S>(self, shape: S) -> Self { todo!() }
    fn private_helper(&self) {}
    pub fn from_data(data: Vec<f32>, device: &B) -> Self { todo!() }
}
"""
MODULE = """
/// doc
pub fn avg_pool2d<B>(x: Tensor<B, 4>, kernel_size: [usize; 2], count_include_pad: bool) -> Tensor<B, 4> {
    todo!()
}
pub(crate) fn internal() {}
"""
BACKEND = """
pub trait ModuleOps<B> {
    fn avg_pool2d_backward(x: B, grad: B) -> B;
}
pub struct Autodiff<B>(B);
impl<B> ModuleOps<Autodiff<B>> for Autodiff<B> {
    fn avg_pool2d_backward(_x: Self, _grad: Self) -> Self { panic!("no") }
}
"""
OTHER_LIB = "pub mod deep { pub fn thing(a: u8) {} }"


def _rows(files: dict[str, tuple[str, str]], ref: str = "v1.0.0") -> list[dict[str, Any]]:
    return [
        {
            "repo": "o/r",
            "filePath": path,
            "versions": [{"refs": [ref], "crate": crate, "api": read_file_api(text)}],
        }
        for path, (crate, text) in files.items()
    ]


def table() -> ApiTable:
    return ApiTable(
        _rows(
            {
                "crates/my-crate/src/lib.rs": ("my-crate", LIB),
                "crates/my-crate/src/tensor/mod.rs": ("my-crate", TENSOR),
                "crates/my-crate/src/tensor/api.rs": ("my-crate", API),
                "crates/my-crate/src/tensor/module.rs": ("my-crate", MODULE),
                "crates/my-crate/src/backend.rs": ("my-crate", BACKEND),
                "crates/other-crate/src/lib.rs": ("other-crate", OTHER_LIB),
            }
        )
    )


def test_a_file_api_keeps_public_items_parameters_and_leaves_tests_out() -> None:
    api = read_file_api(MODULE)
    assert api["scopes"][""]["items"] == [["avg_pool2d", "fn"]]  # pub(crate) is not public
    [[scope, owner, name, receiver, params]] = api["fns"]
    assert (scope, owner, name, receiver) == ("", "", "avg_pool2d", "")
    assert params == [["x", "Tensor<B, 4>"], ["kernel_size", "[usize; 2]"], ["count_include_pad", "bool"]]
    lib = read_file_api(LIB)
    assert ["tests", False] not in lib["scopes"][""]["mods"] and "tests" not in lib["scopes"]
    assert ["other_crate", "other", True] in lib["scopes"][""]["uses"]
    owners = {(f[1], f[2], f[3]) for f in read_file_api(API)["fns"]}
    assert owners == {("Tensor", "reshape", "self"), ("Tensor", "from_data", "")}  # private helper left out
    assert read_file_api(API)["variants"] == [["", "DType", ["F32", "F64", "QFloat"]]]


def test_paths_resolve_through_globs_aliases_and_other_crates() -> None:
    release = table().release("o/r", "v1.0.0")
    assert release is not None
    # A glob of a private module's re-exports, as burn-tensor's `mod tensor; pub use tensor::*;`.
    [entry] = release.resolve(["my_crate", "module", "avg_pool2d"])
    assert entry.kind == "fn"
    [signature] = release.functions_of(entry)
    assert [name for name, _ in signature.params] == ["x", "kernel_size", "count_include_pad"]
    assert [e.kind for e in release.resolve(["my_crate", "Tensor"])] == ["struct"]
    assert [e.kind for e in release.resolve(["my_crate", "Dims"])] == ["struct"]  # `Shape as Dims`
    assert [e.kind for e in release.resolve(["my_crate", "DType", "F32"])] == ["variant"]
    assert [e.kind for e in release.resolve(["my_crate", "other", "deep", "thing"])] == ["fn"]
    assert release.resolve(["my_crate", "module", "internal"]) == []
    assert release.resolve(["my_crate", "pool", "avg_pool2d"]) == []
    assert release.resolve(["my_crate", "tests", "hidden"]) == []


def test_methods_by_owner_trait_impls_included() -> None:
    release = table().release("o/r", "v1.0.0")
    assert release is not None
    assert [s.shown() for s in release.methods("Tensor", "reshape")] == ["Tensor::reshape(self, shape: S)"]
    assert release.methods("Tensor", "private_helper") == []
    # A trait's methods carry no `pub`; its impl for Autodiff gives Autodiff the method.
    assert {s.owner for s in release.methods(None, "avg_pool2d_backward")} == {"ModuleOps", "Autodiff"}
    assert "crates/my-crate/src/backend.rs" in release.defines("avg_pool2d_backward")
    assert sorted(release.reachable_modules()) == [
        "backend",
        "deep",
        "module",
        "my_crate",
        "other",
        "other_crate",
    ]


def test_releases_are_kept_apart() -> None:
    rows = _rows({"crates/my-crate/src/lib.rs": ("my-crate", "pub fn old_one() {}")}, "v0.9.0")
    rows += _rows({"crates/my-crate/src/lib.rs": ("my-crate", "pub fn new_one() {}")}, "v1.0.0")
    api = ApiTable(rows)
    old, new = api.release("o/r", "v0.9.0"), api.release("o/r", "v1.0.0")
    assert old is not None and new is not None
    assert old.resolve(["my_crate", "old_one"]) and not old.resolve(["my_crate", "new_one"])
    assert new.resolve(["my_crate", "new_one"]) and not new.resolve(["my_crate", "old_one"])
    assert api.release("o/r", "v2.0.0") is None


def test_names_re_exported_from_another_repository_resolve_without_being_checked() -> None:
    """burn-wgpu's `pub use cubecl::wgpu::WgpuRuntime` and `pub use half::*` name real items of crates these
    tables do not hold: a path through them exists (an example may use it), what follows is not checked;
    a name that no `use` brings is still nothing."""
    lib = """
pub mod backend;
pub use cubecl::wgpu::WgpuRuntime;
pub use cubecl::wgpu::{WgpuDevice as Device};
"""
    backend = "pub use half::*;\npub struct Local;"
    api = ApiTable(
        _rows(
            {
                "crates/my-wgpu/src/lib.rs": ("my-wgpu", lib),
                "crates/my-wgpu/src/backend.rs": ("my-wgpu", backend),
            }
        )
    )
    release = api.release("o/r", "v1.0.0")
    assert release is not None
    assert [e.kind for e in release.resolve(["my_wgpu", "WgpuRuntime"])] == ["extern"]
    assert [e.kind for e in release.resolve(["my_wgpu", "Device", "new"])] == ["extern"]
    assert [e.kind for e in release.resolve(["my_wgpu", "backend", "f16"])] == ["extern"]  # the glob
    assert [e.kind for e in release.resolve(["my_wgpu", "backend", "Local"])] == ["struct"]
    assert release.resolve(["my_wgpu", "Nope"]) == []  # the crate root has no glob of another crate
    assert release.resolve(["my_wgpu", "WgpuDevice"]) == []  # imported under another name
