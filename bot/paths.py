"""Source paths as users have them (absolute, Windows, cargo registry, git checkout) to repository paths."""

from __future__ import annotations

import re
from functools import lru_cache

_REGISTRY = re.compile(
    r"(?:^|/)registry/src/[^/]+/(?P<crate>[A-Za-z0-9_-]+?)-\d+\.\d+\.\d+[^/]*/(?P<rest>.+)$"
)
_VENDORED = re.compile(r"(?:^|/)vendor/(?P<crate>[A-Za-z0-9_-]+?)(?:-\d+\.\d+\.\d+[^/]*)?/(?P<rest>src/.+)$")
_DRIVE = re.compile(r"^[A-Za-z]:/")
# A path pasted from a crate's folder on: `burn-fusion/src/stream/x.rs` (a dashed crate name, then `src/`).
_CRATE_FOLDER = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)+/src/")
# A Burn crate at the top level of a Burn checkout, as Burn had them before v0.13 (`crates/` came then):
# a clone `.../burn/burn-tensor/src/x.rs`, a git dependency `git/checkouts/burn-<hash>/<rev>/burn-core/...`.
_TOP_LEVEL_BURN_CRATE = re.compile(
    r"(?:^|/)(?:burn|git/checkouts/burn-[0-9a-f]{8,}/[0-9a-f]{7,40})"
    r"/(?P<crate>burn(?:-[a-z0-9]+)*)/(?P<rest>src/.+)$"
)


def canonical_path(raw: str) -> str:
    """The repository-relative path (`crates/<crate>/src/...`) where it can be known, else the cleaned path.

    `.../registry/src/<index>/burn-autodiff-0.19.0/src/ops/x.rs` -> `crates/burn-autodiff/src/ops/x.rs`
    `.cargo/git/checkouts/burn-<hash>/<rev>/crates/...` -> `crates/...`
    `burn-fusion/src/stream/x.rs` -> `crates/burn-fusion/src/stream/x.rs`
    `/home/me/burn/burn-tensor/src/x.rs` (Burn before v0.13) -> `crates/burn-tensor/src/x.rs`
    """
    path = raw.strip().strip("'\"`").replace("\\", "/")
    path = re.sub(r"/{2,}", "/", path)
    path = _DRIVE.sub("/", path)
    if path.startswith("~/"):
        path = path[1:]
    registry = _REGISTRY.search(path)
    if registry:
        return f"crates/{registry.group('crate')}/{registry.group('rest')}"
    vendored = _VENDORED.search(path)
    if vendored:
        return f"crates/{vendored.group('crate')}/{vendored.group('rest')}"
    # The last `crates/` wins: a checkout can live under a folder that is itself called crates.
    last = ("/" + path).rfind("/crates/")
    if last >= 0 and path[last:].count("/") >= 2:
        return path[last:]
    top_level = _TOP_LEVEL_BURN_CRATE.search(path)
    if top_level:
        return f"crates/{top_level.group('crate')}/{top_level.group('rest')}"
    path = path.removeprefix("./")
    if _CRATE_FOLDER.match(path):
        return f"crates/{path}"
    return path


@lru_cache(maxsize=8192)
def path_parts(path: str) -> tuple[str, ...]:
    """The components of a `/` path (a catalog's files repeat, and so do pasted ones)."""
    return tuple(part for part in path.split("/") if part and part != ".")


def common_suffix_length(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """How many trailing path components two paths share."""
    count = 0
    for left, right in zip(reversed(a), reversed(b), strict=False):
        if left != right:
            break
        count += 1
    return count
