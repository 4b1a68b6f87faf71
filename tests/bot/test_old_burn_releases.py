"""Pastes from Burn releases of before v0.13 (its crates at the top level, `burn-tensor/` rather than
`crates/burn-tensor/`) and from cubecl's first tag, on the embedded catalog: the record, the release, the
line and a link to the file where that release has it."""

from __future__ import annotations

import pytest

from bot.harvest import record_id
from bot.lookup import PanicLookup
from bot.records import default_catalog
from tests.bot.test_service_releases import REGISTRY, paste

BURN = "tracel-ai/burn"
# v0.3.0's commit: a git dependency on that release is checked out at it.
V0_3_0 = "df95fc38ae3abb982887879f80a556aa76ebde36"


@pytest.fixture(scope="module")
def service() -> PanicLookup:
    return PanicLookup(default_catalog())


def test_a_burn_tensor_0_8_0_paste_gets_the_record_every_release_shares(service: PanicLookup) -> None:
    message = "Element (300) is not within range 0..255"
    result = service.lookup(paste(f"{REGISTRY}/burn-tensor-0.8.0/src/tensor/data.rs:182:17", message))
    path = "crates/burn-tensor/src/tensor/data.rs"
    # The id the record had before the old releases were harvested: its crates/ path.
    expected = record_id(BURN, path, "Element ({elem:?}) is not within range {range:?}")
    assert result.best is not None and result.best.record.id == expected
    site = service.site(result)
    assert site is not None
    assert (site.crate, site.version, site.release, site.line) == ("burn-tensor", "0.8.0", "v0.8.0", 182)
    assert site.in_pasted_release is True
    assert "not in the catalog" not in site.note
    assert site.file == "burn-tensor/src/tensor/data.rs"  # where v0.8.0 has it
    assert site.url == f"https://github.com/{BURN}/blob/v0.8.0/burn-tensor/src/tensor/data.rs#L182"
    # The same record answers a v0.13 paste, at v0.13's line and path.
    later = service.lookup(paste(f"{REGISTRY}/burn-tensor-0.13.0/src/tensor/data.rs:167:17", message))
    assert later.best is not None and later.best.record.id == expected
    later_site = service.site(later)
    assert later_site is not None and later_site.url is not None
    assert later_site.url.endswith(f"/blob/v0.13.0/{path}#L167")


@pytest.mark.parametrize(
    "location",
    [
        f"{REGISTRY}/burn-tensor-0.3.0/src/tensor/shape.rs:38:13",
        f"/home/dev/.cargo/git/checkouts/burn-0f1e2d3c4b5a6978/{V0_3_0[:7]}/burn-tensor/src/tensor/shape.rs:38:13",
    ],
)
def test_a_v0_3_paste_gets_its_record_and_release(service: PanicLookup, location: str) -> None:
    result = service.lookup(paste(location, "Cant index that"))
    path = "crates/burn-tensor/src/tensor/shape.rs"
    assert result.best is not None and result.best.record.id == record_id(BURN, path, "Cant index that")
    site = service.site(result)
    assert site is not None
    assert (site.version, site.release, site.line, site.in_pasted_release) == ("0.3.0", "v0.3.0", 38, True)
    assert site.url == f"https://github.com/{BURN}/blob/v0.3.0/burn-tensor/src/tensor/shape.rs#L38"


def test_a_first_tag_cubecl_paste_gets_its_record_and_release(service: PanicLookup) -> None:
    location = f"{REGISTRY}/cubecl-core-0.1.1/src/codegen/execution.rs:320:22"
    result = service.lookup(paste(location, "Bool scalars are not supported"))
    assert result.best is not None
    assert result.best.record.filePath == "crates/cubecl-core/src/codegen/execution.rs"
    site = service.site(result)
    assert site is not None
    assert (site.crate, site.version, site.release, site.line) == ("cubecl-core", "0.1.1", "v0.1.1", 320)
    assert site.in_pasted_release is True


def test_every_burn_release_tag_from_v0_3_0_is_in_the_catalog(service: PanicLookup) -> None:
    refs = [release.ref for release in service.releases.releases[BURN] if release.is_tag]
    assert refs[:13] == [
        "v0.3.0",
        "v0.4.0",
        "v0.5.0",
        "v0.6.0",
        "v0.7.0",
        "v0.8.0",
        "v0.9.0",
        "v0.10.0",
        "v0.11.0",
        "v0.11.1",
        "v0.12.0",
        "v0.12.1",
        "v0.13.0",
    ]
    old = [release for release in service.releases.releases[BURN] if release.ref in refs[:12]]
    assert all(release.path_prefix == "crates/" for release in old)
    cubecl = [release.ref for release in service.releases.releases["tracel-ai/cubecl"] if release.is_tag]
    onnx = [release.ref for release in service.releases.releases["tracel-ai/burn-onnx"] if release.is_tag]
    assert cubecl[0] == "v0.1.1" and onnx[0] == "v0.21.0-pre.1"  # their first tags
