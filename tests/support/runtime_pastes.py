"""Seeded pastes of Rust runtime panics raised inside harvested crates: the panic text std (or the crate)
printed, from `tests/fixtures/rust_runtime/`, moved to a line inside a real function of Burn, cubecl or
tch-rs at a harvested release (a cargo registry path with that crate's version), in the new or the old
Rust format, alone or followed by the echoes it causes (a PoisonError unwrap, a SendError unwrap).

A case is right when the top match is the fixture's record, and its site right when the lookup names the
file and the function of that release that holds the line.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from bot.extract import extract_panics
from bot.records import Catalog
from bot.releases import FunctionRange, Release

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rust_runtime"
SITE_REPOS = ("tracel-ai/burn", "tracel-ai/cubecl", "LaurentMazare/tch-rs")
_CRATES_IO = "index.crates.io-1949cf8c6b5b557f"
_NOTE = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
_ECHOES = (
    "called `Result::unwrap()` on an `Err` value: PoisonError { .. }",
    "called `Result::unwrap()` on an `Err` value: SendError { .. }",
)


@dataclass(frozen=True)
class RuntimeCase:
    text: str
    fixture: str
    record_slug: str
    repo: str
    release: str
    file_path: str
    line: int
    function: str
    fmt: str
    with_echo: bool


def _fixture_message(stem: str) -> str | None:
    """The message of the fixture's panic its record is about: the last one of an echo fixture (the
    PoisonError after the worker's panic), the first one of a root-cause fixture."""
    panics = extract_panics((FIXTURES / f"{stem}.txt").read_text(encoding="utf-8"))
    if not panics:
        return None
    return panics[0].message if stem.endswith("root_cause") else panics[-1].message


def _function_lines(catalog: Catalog) -> list[tuple[str, str, Release, FunctionRange]]:
    """(repo, file, release, function) for functions of the site repositories' tagged releases."""
    table = catalog.releases
    by_ref = {(r.repo, r.ref): r for releases in table.releases.values() for r in releases}
    found = []
    for path in table.function_paths():
        if "/src/" not in f"/{path}" or path.endswith("build.rs"):
            continue
        for repo, refs, spans in table._file_functions(path):
            if repo not in SITE_REPOS:
                continue
            for ref in sorted(refs):
                release = by_ref.get((repo, ref))
                if release is None or (repo != "LaurentMazare/tch-rs" and not release.is_tag):
                    continue
                for span in spans:
                    if span.end_line - span.start_line >= 2:
                        found.append((repo, path, release, span))
    return found


def _registry_path(repo: str, path: str, release: Release) -> tuple[str, str] | None:
    """The registry path of a repository file at a release, and its crate."""
    parts = path.split("/")
    if repo == "LaurentMazare/tch-rs":
        if parts[0] == "torch-sys":
            crate, rest = "torch-sys", "/".join(parts[1:])
        else:
            crate, rest = "tch", path
    elif parts[0] == "crates" and len(parts) > 2:
        crate, rest = parts[1], "/".join(parts[2:])
    else:
        return None
    version = release.crate_version(crate)
    if not version:
        return None
    return crate, f"/home/dev/.cargo/registry/src/{_CRATES_IO}/{crate}-{version}/{rest}"


def runtime_cases(
    catalog: Catalog, expected: dict[str, str], seed: int = 0, count: int = 300
) -> list[RuntimeCase]:
    rng = random.Random(seed)
    spots = _function_lines(catalog)
    stems = sorted(stem for stem in expected if _fixture_message(stem))
    cases: list[RuntimeCase] = []
    while len(cases) < count:
        stem = stems[len(cases) % len(stems)]
        message = _fixture_message(stem) or ""
        repo, path, release, span = rng.choice(spots)
        located = _registry_path(repo, path, release)
        if located is None:
            continue
        _crate, registry = located
        line = rng.randint(span.start_line + 1, span.end_line)
        # The innermost function holding the line is the right answer (the span may hold nested ones).
        function = catalog.releases.function_at(repo, path, [release], line)
        if function is None:
            continue
        where = f"{registry}:{line}:{rng.randint(5, 60)}"
        fmt = rng.choice(("new", "new-tid", "old"))
        if fmt == "old" and "\n" not in message:
            text = f"thread 'main' panicked at '{message}', {where}\n{_NOTE}"
        elif fmt == "new-tid":
            text = f"thread '<unnamed>' ({rng.randint(100, 99999)}) panicked at {where}:\n{message}\n{_NOTE}"
        else:
            fmt = "new"
            text = f"thread 'main' panicked at {where}:\n{message}\n{_NOTE}"
        with_echo = rng.random() < 0.3
        if with_echo:
            echo = rng.choice(_ECHOES)
            text += f"\nthread 'main' panicked at src/main.rs:{rng.randint(10, 90)}:41:\n{echo}\n"
        cases.append(
            RuntimeCase(
                text, stem, expected[stem], repo, release.name, path, line, function.qualified, fmt, with_echo
            )
        )
    return cases
