"""Seeded pastes from old releases, built from the embedded ecosystem catalog's side table: a site as it was
in one harvested release (that release's message, file and line), printed the way a user of that release
sees it (registry path with the crate's version, mirrors, git checkouts; old and new Rust formats).

A case is right when the top match has the message and the file of that release's site (or is the analysed
record that covers it). Run ``python -m tests.support.release_pastes --out cases.jsonl`` to dump cases.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from bot.records import Catalog, default_catalog
from bot.releases import Release, Site, version_key
from tests.support.pastes import NOTE, runtime_message

FORMATS = ("registry-new", "registry-old", "mirror-threadid", "git-checkout", "backtrace", "windows")
_CRATES_IO = ["index.crates.io-1949cf8c6b5b557f", "index.crates.io-6f17d22bba15001f"]
_MIRRORS = ["mirrors.tuna.tsinghua.edu.cn-df7c3c540f42cdbd", "rsproxy.cn-0dccff568467c15b"]
_USERS = ["ana", "dev", "jsmith", "runner", "ubuntu", "mlee"]
# The Burn releases the held-out set is drawn from (v0.14 to v0.21, pre-releases included), and the
# dependency releases those Burn releases pulled in.
BURN_OLDEST, BURN_NEWEST = (0, 14, 0), (0, 21, 99)
# `window="pre-0.13"`: Burn's releases from before its crates moved under `crates/` (v0.3.0 to v0.12.1) only.
WINDOWS = {"default": (BURN_OLDEST, BURN_NEWEST), "pre-0.13": ((0, 0, 0), (0, 12, 99))}


@dataclass(frozen=True)
class ReleaseCase:
    text: str
    fmt: str
    repo: str
    release: str
    crate: str
    version: str
    message: str
    file_path: str
    accepted_ids: frozenset[str]

    def to_json(self) -> dict[str, object]:
        return {
            "text": self.text,
            "fmt": self.fmt,
            "repo": self.repo,
            "release": self.release,
            "crate": self.crate,
            "version": self.version,
            "message": self.message,
            "file": self.file_path,
            "accepted_ids": sorted(self.accepted_ids),
        }

    @classmethod
    def from_json(cls, row: dict[str, object]) -> ReleaseCase:
        """A case `to_json` wrote."""
        ids = row["accepted_ids"]
        return cls(
            text=str(row["text"]),
            fmt=str(row["fmt"]),
            repo=str(row["repo"]),
            release=str(row["release"]),
            crate=str(row["crate"]),
            version=str(row["version"]),
            message=str(row["message"]),
            file_path=str(row["file"]),
            accepted_ids=frozenset(str(i) for i in ids) if isinstance(ids, list) else frozenset(),
        )


def _in_window(release: Release, window: str = "default") -> bool:
    oldest, newest = WINDOWS[window]
    if release.repo != "tracel-ai/burn" or not release.is_tag:
        return release.repo != "tracel-ai/burn" and window == "default"
    return oldest <= version_key(release.ref)[:3] <= newest


def _crate_relative(file_path: str) -> str:
    parts = file_path.split("/")
    if "src" in parts:
        return "/".join(parts[parts.index("src") :])
    return parts[-1]


def _location(fmt: str, site: Site, file_path: str, rng: random.Random) -> str:
    crate, version = site.crate or "", site.version or ""
    rest = _crate_relative(file_path)
    column = site.column or rng.randint(5, 40)
    where = f"{site.line}:{column}"
    user = rng.choice(_USERS)
    if fmt in ("registry-new", "registry-old", "backtrace"):
        return f"/home/{user}/.cargo/registry/src/{rng.choice(_CRATES_IO)}/{crate}-{version}/{rest}:{where}"
    if fmt == "mirror-threadid":
        return f"/home/{user}/.cargo/registry/src/{rng.choice(_MIRRORS)}/{crate}-{version}/{rest}:{where}"
    if fmt == "git-checkout":
        name = site.release.repo.rsplit("/", 1)[-1]
        checkout = f"{name}-{rng.getrandbits(64):016x}/{site.release.sha[:7]}"
        # The file where that release's tree has it (Burn's crates sat at the top level before v0.13).
        tree_path = site.release.repository_path(file_path)
        return f"/home/{user}/.cargo/git/checkouts/{checkout}/{tree_path}:{where}"
    index = rng.choice(_CRATES_IO)
    return (
        f"C:\\Users\\{user}\\.cargo\\registry\\src\\{index}\\{crate}-{version}\\"
        + rest.replace("/", "\\")
        + f":{where}"
    )


def _paste(fmt: str, location: str, message: str, site: Site, rng: random.Random) -> str:
    if fmt == "registry-old":
        return f"thread 'main' panicked at '{message}', {location}\n{NOTE}"
    if fmt == "mirror-threadid":
        return f"thread '<unnamed>' ({rng.randint(1000, 99999)}) panicked at {location}:\n{message}\n{NOTE}"
    if fmt == "backtrace":
        function = site.function or "{{closure}}"
        crate = (site.crate or "").replace("-", "_")
        frames = [
            ("__rustc::rust_begin_unwind", "/rustc/abc/library/std/src/panicking.rs:697:5"),
            ("core::panicking::panic_fmt", "/rustc/abc/library/core/src/panicking.rs:75:14"),
            (f"{crate}::{function}", location),
            ("my_app::main", f"./src/main.rs:{rng.randint(5, 80)}:5"),
        ]
        trace = "\n".join(f"{i:>4}: {name}\n             at {at}" for i, (name, at) in enumerate(frames))
        return f"thread 'main' panicked at {location}:\n{message}\nstack backtrace:\n{trace}"
    return f"thread 'main' panicked at {location}:\n{message}\n{NOTE}"


def release_cases(
    catalog: Catalog, seed: int = 0, count: int = 320, window: str = "default"
) -> list[ReleaseCase]:
    """`count` pastes: sites drawn evenly over the releases in the window (`default`: Burn v0.14 to v0.21
    and the dependency releases; `pre-0.13`: Burn v0.3.0 to v0.12.1), a format each."""
    rng = random.Random(seed)
    records = {entry.record.id: entry.record for entry in catalog.entries}
    covering: dict[str, set[str]] = {}
    for covered, by in catalog.covered.items():
        covering.setdefault(covered, set()).add(by)
    by_release: dict[tuple[str, str], list[tuple[str, Site]]] = {}
    for record_id, sites in sorted(catalog.releases.sites.items()):
        if record_id not in records:
            continue
        for site in sites:
            if _in_window(site.release, window) and site.crate and site.version and site.kind:
                by_release.setdefault((site.release.repo, site.release.ref), []).append((record_id, site))
    releases = sorted(by_release)
    cases: list[ReleaseCase] = []
    for index in range(count):
        release_key = releases[index % len(releases)] if index % 3 else rng.choice(releases)
        record_id, site = rng.choice(by_release[release_key])
        record = records[record_id]
        file_path = catalog.releases.paths.get(record_id) or record.filePath or ""
        kind = site.kind or "panic"
        fake_site = {"kind": kind, "isFormat": kind != "expect", "function": site.function}
        message = runtime_message({"errorMessage": record.errorMessage}, fake_site, rng)
        fmt = FORMATS[index % len(FORMATS)]
        location = _location(fmt, site, file_path, rng)
        text = _paste(fmt, location, message, site, rng)
        accepted = {record_id, *covering.get(record_id, ())}
        cases.append(
            ReleaseCase(
                text=text,
                fmt=fmt,
                repo=site.release.repo,
                release=site.release.ref,
                crate=site.crate or "",
                version=site.version or "",
                message=record.errorMessage,
                file_path=file_path,
                accepted_ids=frozenset(accepted),
            )
        )
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=320)
    parser.add_argument("--window", choices=sorted(WINDOWS), default="default")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    cases = release_cases(default_catalog(), args.seed, args.count, args.window)
    lines = [json.dumps(case.to_json(), ensure_ascii=False) for case in cases]
    if args.out:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
