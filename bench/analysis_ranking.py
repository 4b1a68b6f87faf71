"""Which messages of the embedded catalog to analyse first (issue 22, "choose by evidence").

    uv run python bench/analysis_ranking.py [--top 600] [--per-repo 50] [--out bench/analysis_ranking.csv]
                  [--evidence bench/analysis_evidence.csv] [--pastes bench/real_pastes.csv]

A *message* is one errorMessage text of one repository across all the files and releases that raise it (its
placeholders compared as equal, so `{:?}` and `{id:?}` are one message spelled by two releases); it lists the
ids of its records. Each message gets a score, the sum of these parts (each part is named in the `reasons`
column with its points):

- evidence (dominant): the public pages where the message was pasted, from `bench/analysis_evidence.csv` and
  `bench/real_pastes.csv` (facts only: URLs). 100 points for the first URL, 25 for each further one, at most
  200.
  A message with one real report outranks any message without one.
- family: 12 points when a message of the same analysis family (bot/data/families.toml) and the same crate
  has evidence ("every message of a family that real pastes hit").
- area (0-30): where the code is, by path (`AREAS` below, first match wins): the checks users meet most
  (tensor operations' argument checks, burn-train, records and modules, datasets and the data loader,
  backend and device selection, autodiff, fusion, ONNX import) weigh most; kernels, compilers and
  internals of the graphics stack least.
- repository (0-10): Burn first, then cubecl, wgpu and burn-onnx (`REPOSITORIES`).
- releases (0-15): 3 x log2(1 + releases that raise it): a message raised by every release since v0.13 is
  met by more users than one raised by a single pre-release.
- reachability (-15..+20): from how the site fails (`backgroundTag`) and the words of the message: a tensor
  argument check (+20), an operation a backend does not implement (+10), a message addressed to the caller
  ("must", "expected", "not supported", "invalid" ...: +8), an internal invariant (`unreachable!`, "should
  have", "bug": -8 to -15).

`done` says whether a written analysis covers the message: `yes` when every record of it has one (an
analysed record of bot/data/analyses.jsonl, default_catalog.jsonl or rust_runtime.jsonl with the record's id,
or with its file and message), `partial k/n` when some do. Done messages are ranked like the others (the
ranking says what users paste; `done` says what is left to write).

Writes the CSV (rank, score, repo, message, record ids, files, releases, area, family, evidence URLs, reasons,
done): the top `--top` rows, every message with evidence and the first `--per-repo` of each repository, best
first (rank is the rank among all messages).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = ROOT / "bot" / "data"
DEFAULT_EVIDENCE = ROOT / "bench" / "analysis_evidence.csv"
DEFAULT_PASTES = ROOT / "bench" / "real_pastes.csv"
DEFAULT_OUT = ROOT / "bench" / "analysis_ranking.csv"
ANALYSED_FILES = ("analyses.jsonl", "default_catalog.jsonl", "rust_runtime.jsonl")

PLACEHOLDER = re.compile(r"\{[^{}]*\}")
SPACES = re.compile(r"\s+")

# (label, pattern searched in the record's file path, points). First match wins; no match: "other" (4).
AREAS: tuple[tuple[str, re.Pattern[str], int], ...] = tuple(
    (label, re.compile(pattern), points)
    for label, pattern, points in (
        ("tensor argument check", r"burn-tensor/src/tensor/api/check\.rs$|burn-tensor/src/tensor/api/", 30),
        ("burn-train", r"burn-train/src/", 26),
        ("records and modules", r"burn-core/src/(record|module)/|burn-store/src/|burn-derive/", 26),
        ("dataset and data loader", r"burn-dataset/src/|burn-core/src/data/|burn-train/src/data/", 24),
        (
            "backend and device selection",
            r"burn-wgpu/src/|burn-cuda/src/|burn-rocm/src/|burn-hip/src/|burn-ndarray/src/|burn-tch/src/"
            r"|burn-candle/src/|burn-compute/src/|burn-router/src/|burn-remote/src/|burn-flex/src/"
            r"|cubecl-(wgpu|cuda|hip)/src/(runtime|device|lib)\.rs$|cubecl-runtime/src/(client|channel)"
            r"|cubecl-common/src/device",
            22,
        ),
        ("autodiff", r"burn-autodiff/src/", 22),
        ("ONNX import", r"burn-import/src/|onnx-ir/src/|burn-onnx/src/|crates/onnx", 20),
        (
            "nn modules and optimizers",
            r"burn-core/src/(nn|optim|lr_scheduler)/|burn-nn/src/|burn-optim/src/",
            18,
        ),
        ("fusion", r"burn-fusion/src/|burn-cubecl-fusion/src/|burn-ir/src/|fusion", 16),
        ("tensor internals", r"burn-tensor/src/|burn-std/src/|burn-backend/src/", 15),
        ("cubecl memory and tuning", r"cubecl-runtime/src/", 14),
        ("burn kernels", r"burn-(cubecl|jit)/src/", 10),
        ("ndarray", r"^src/(impl_|arraytraits|dimension|lib|macro_utils|zip|slice)", 10),
        ("wgpu api", r"^wgpu/src/", 10),
        ("cubecl kernels and compilers", r"cubecl-", 6),
        ("wgpu internals", r"^(wgpu-core|wgpu-hal|naga|wgpu-types)/", 5),
    )
)
OTHER_AREA = ("other", 4)

REPOSITORIES = {
    "tracel-ai/burn": 10,
    "tracel-ai/cubecl": 6,
    "gfx-rs/wgpu": 4,
    "tracel-ai/burn-onnx": 3,
    "tracel-ai/cubek": 2,
    "rust-ndarray/ndarray": 2,
    "LaurentMazare/tch-rs": 2,
}

USER_WORDS = re.compile(
    r"\b(must|expected|expects|invalid|not supported|unsupported|only supports?|should be|cannot|can't|"
    r"please|make sure|mismatch|does not match|do not match|out of bounds|too (large|big|small)|"
    r"requires?|not found|no such|failed to (load|read|open|save|parse))\b",
    re.IGNORECASE,
)
INTERNAL_WORDS = re.compile(
    r"\b(should have|should never|should not happen|should always|this is a bug|internal error|"
    r"unreachable|impossible)\b",
    re.IGNORECASE,
)

EVIDENCE_FIRST, EVIDENCE_MORE, EVIDENCE_CAP = 100, 25, 200
FAMILY_POINTS = 12


def normalize(message: str) -> str:
    """One message spelled by several releases: placeholders equal, runs of white space equal."""
    return SPACES.sub(" ", PLACEHOLDER.sub("{}", message)).strip()


def url_kind(url: str) -> str:
    if "/pull/" in url:
        return "PR"
    if "/discussions/" in url:
        return "discussion"
    if "/issues/" in url:
        return "issue"
    return "page"


@dataclass(frozen=True)
class Evidence:
    """One public page where a message was pasted. `message` (with `file`, a path or its tail, when the text
    is too common to say alone) or `record_id` says which message; `file` empty with a message means a
    record without a file (a Rust runtime panic) when `runtime` is set, any file otherwise."""

    url: str
    kind: str
    message: str = ""
    file: str = ""
    record_id: str = ""
    runtime: bool = False


@dataclass
class Message:
    repo: str
    message: str
    records: list[dict[str, Any]] = field(default_factory=list)
    releases: set[str] = field(default_factory=set)
    family: str = ""
    done_records: int = 0
    evidence: list[str] = field(default_factory=list)
    score: float = 0.0
    reasons: list[str] = field(default_factory=list)
    area: str = ""

    @property
    def key(self) -> str:
        return normalize(self.message)

    @property
    def ids(self) -> list[str]:
        return [r["id"] for r in self.records]

    @property
    def files(self) -> list[str]:
        return sorted({r.get("filePath") or "" for r in self.records} - {""})

    @property
    def crates(self) -> set[str]:
        return {crate_of(f) for f in self.files} or {self.repo}

    @property
    def done(self) -> str:
        if not self.done_records:
            return ""
        if self.done_records >= len(self.records):
            return "yes"
        return f"partial {self.done_records}/{len(self.records)}"


def crate_of(path: str) -> str:
    parts = path.split("/")
    if len(parts) > 2 and parts[0] == "crates":
        return parts[1]
    return parts[0] if len(parts) > 1 else path


def file_matches(pasted: str, files: Iterable[str]) -> bool:
    """A file named by evidence is the record's, or one path ends with the other."""
    pasted = pasted.strip().lstrip("./")
    return any(f == pasted or f.endswith("/" + pasted) or pasted.endswith("/" + f) for f in files)


def area_of(files: Sequence[str]) -> tuple[str, int]:
    best = OTHER_AREA
    for path in files:
        for label, pattern, points in AREAS:
            if pattern.search(path):
                if points > best[1]:
                    best = (label, points)
                break
    return best


def reachability(tags: set[str], message: str) -> tuple[int, str]:
    """Points for how likely a user's own call reaches the site, and why."""
    if "tensor-check-failed" in tags:
        return 20, "tensor argument check"
    if "unreachable-invariant" in tags:
        return -15, "unreachable! invariant"
    if INTERNAL_WORDS.search(message):
        return -8, "internal invariant wording"
    if "unimplemented-api-stub" in tags:
        return 10, "operation not implemented"
    if USER_WORDS.search(message):
        return 8, "message addressed to the caller"
    if tags & {"assertion-failed", "assertion-mismatch"}:
        return 2, "assertion with a message"
    return 0, ""


def group_messages(
    records: Iterable[Mapping[str, Any]], releases: Mapping[str, set[str]], families: Mapping[str, str]
) -> list[Message]:
    """Records with the same repository and (normalized) message are one message."""
    groups: dict[tuple[str, str], Message] = {}
    for record in records:
        repo = record.get("repo") or "?"
        key = (repo, normalize(record["errorMessage"]))
        group = groups.get(key)
        if group is None:
            group = groups[key] = Message(repo=repo, message=record["errorMessage"])
        group.records.append(dict(record))
        group.releases |= releases.get(record["id"], set())
        if not group.family and families.get(record["id"]):
            group.family = families[record["id"]]
    return list(groups.values())


def mark_done(messages: Iterable[Message], analysed: Iterable[Mapping[str, Any]]) -> None:
    """Count the records of each message that have a written analysis (by id, or by file and message)."""
    ids: set[str] = set()
    sites: set[tuple[str, str]] = set()
    for record in analysed:
        if record.get("documentation") or record.get("solutions"):
            ids.add(record["id"])
            sites.add((record.get("filePath") or "", normalize(record["errorMessage"])))
    for message in messages:
        message.done_records = sum(
            1
            for r in message.records
            if r["id"] in ids or ((r.get("filePath") or ""), normalize(r["errorMessage"])) in sites
        )


def attach_evidence(messages: Sequence[Message], evidence: Iterable[Evidence]) -> None:
    by_key: dict[str, list[Message]] = defaultdict(list)
    by_id: dict[str, Message] = {}
    for message in messages:
        by_key[message.key].append(message)
        for record_id in message.ids:
            by_id[record_id] = message
    for item in evidence:
        targets: list[Message] = []
        if item.record_id and item.record_id in by_id:
            targets = [by_id[item.record_id]]
        elif item.message:
            for message in by_key.get(normalize(item.message), []):
                if item.runtime and not item.file:
                    if not message.files:
                        targets.append(message)
                elif not item.file or file_matches(item.file, message.files):
                    targets.append(message)
        for message in targets:
            if item.url not in message.evidence:
                message.evidence.append(item.url)


def score(messages: Sequence[Message]) -> list[Message]:
    """Score every message (see the module's docstring) and return them best first."""
    hit_families = {(m.family, crate) for m in messages if m.evidence and m.family for crate in m.crates}
    for m in messages:
        parts: list[tuple[float, str]] = []
        if m.evidence:
            points = min(EVIDENCE_CAP, EVIDENCE_FIRST + EVIDENCE_MORE * (len(m.evidence) - 1))
            parts.append((points, f"evidence {len(m.evidence)} URL(s)"))
        elif m.family and any((m.family, crate) in hit_families for crate in m.crates):
            parts.append((FAMILY_POINTS, f"family {m.family} pasted in {'/'.join(sorted(m.crates))}"))
        label, points = area_of(m.files)
        m.area = label
        parts.append((points, f"area {label}"))
        repo_points = REPOSITORIES.get(m.repo, 0)
        if repo_points:
            parts.append((repo_points, f"repo {m.repo}"))
        if m.releases:
            parts.append((min(15.0, 3 * math.log2(1 + len(m.releases))), f"{len(m.releases)} release(s)"))
        tags = {r.get("backgroundTag") or "" for r in m.records}
        reach, why = reachability(tags, m.message)
        if reach:
            parts.append((reach, why))
        m.score = round(sum(p for p, _ in parts), 1)
        m.reasons = [f"{why} {p:+.0f}" for p, why in parts]
    return sorted(messages, key=lambda m: (-m.score, m.repo, m.key))


# ---- reading the catalog and the evidence ----------------------------------------------------------------


def _json_lines(path: Path) -> Iterable[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def load_catalog(data: Path) -> tuple[list[dict[str, Any]], dict[str, set[str]], list[dict[str, Any]]]:
    """The ecosystem and analysed records, each record's releases ("repo@ref"), and the analysed records."""
    records = [row["record"] for row in _json_lines(data / "ecosystem.jsonl.gz")]
    releases: dict[str, set[str]] = defaultdict(set)
    for row in _json_lines(data / "ecosystem.sites.jsonl.gz"):
        for release in row.get("releases") or []:
            for ref in release.get("refs") or []:
                releases[row["id"]].add(f"{row['repo']}@{ref}")
    analysed = [row["record"] for name in ANALYSED_FILES for row in _json_lines(data / name)]
    known = {r["id"] for r in records}
    sites = {((r.get("filePath") or ""), normalize(r["errorMessage"])) for r in records}
    # analysed records outside the ecosystem catalog (Rust runtime panics, seeds of another site) are messages
    for record in analysed:
        site = ((record.get("filePath") or ""), normalize(record["errorMessage"]))
        if record["id"] not in known and (not record.get("filePath") or site not in sites):
            records.append(record)
            known.add(record["id"])
    return records, releases, analysed


def families_of(records: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each record's analysis family (bot/data/families.toml), when it is in exactly one."""
    from bot.families import default_families
    from bot.records import Record

    table = default_families()
    found: dict[str, str] = {}
    for record in records:
        try:
            model = Record.model_validate(record)
        except ValueError:
            continue
        matches = table.classify(model)
        if len(matches) == 1:
            found[record["id"]] = matches[0][0].name
    return found


def read_evidence(path: Path) -> list[Evidence]:
    """bench/analysis_evidence.csv: message, file, record_id, url, kind, note."""
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        return [
            Evidence(
                url=row["url"].strip(),
                kind=(row.get("kind") or "").strip() or url_kind(row["url"]),
                message=row.get("message") or "",
                file=(row.get("file") or "").strip(),
                record_id=(row.get("record_id") or "").strip(),
            )
            for row in csv.DictReader(handle)
            if (row.get("url") or "").strip()
        ]


def read_pastes(path: Path) -> list[Evidence]:
    """bench/real_pastes.csv: url, expected_message, expected_file (empty: a Rust runtime panic), note."""
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        return [
            Evidence(
                url=row["url"].strip(),
                kind=url_kind(row["url"]),
                message=row["expected_message"],
                file=(row.get("expected_file") or "").strip(),
                runtime=True,
            )
            for row in csv.DictReader(handle)
            if row.get("expected_message")
        ]


def chosen_rows(ranked: Sequence[Message], top: int, per_repo: int) -> list[Message]:
    """The rows written: the first `top`, every message with evidence, and the first `per_repo` of each
    repository (so cubecl, wgpu and burn-onnx have their own list under Burn's many tensor checks)."""
    seen: dict[str, int] = defaultdict(int)
    rows: list[Message] = []
    for i, m in enumerate(ranked):
        seen[m.repo] += 1
        if i < top or m.evidence or seen[m.repo] <= per_repo:
            rows.append(m)
    return rows


def write_ranking(ranked: Sequence[Message], out: Path, top: int, per_repo: int = 0) -> int:
    rows = set(map(id, chosen_rows(ranked, top, per_repo)))
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(
            ["rank", "score", "repo", "message", "records", "files", "releases", "area", "family",
             "evidence", "reasons", "done"]
        )  # fmt: skip
        for rank, m in enumerate(ranked, 1):
            if id(m) not in rows:
                continue
            writer.writerow(
                [rank, f"{m.score:.1f}", m.repo, m.message, " ".join(m.ids), " ".join(m.files),
                 len(m.releases), m.area, m.family, " ".join(m.evidence), "; ".join(m.reasons), m.done]
            )  # fmt: skip
    return len(rows)


def rank_catalog(data: Path, evidence: Sequence[Evidence]) -> list[Message]:
    records, releases, analysed = load_catalog(data)
    messages = group_messages(records, releases, families_of(records))
    mark_done(messages, analysed)
    attach_evidence(messages, evidence)
    return score(messages)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="catalog folder (default: bot/data)")
    parser.add_argument("--evidence", type=Path, default=DEFAULT_EVIDENCE)
    parser.add_argument("--pastes", type=Path, default=DEFAULT_PASTES)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--top", type=int, default=600, help="rows written besides those with evidence")
    parser.add_argument("--per-repo", type=int, default=50, help="rows written for each repository at least")
    parser.add_argument("--show", type=int, default=20, help="rows printed")
    args = parser.parse_args(argv)
    evidence = read_evidence(args.evidence) + read_pastes(args.pastes)
    ranked = rank_catalog(args.data, evidence)
    written = write_ranking(ranked, args.out, args.top, args.per_repo)
    with_evidence = sum(1 for m in ranked if m.evidence)
    unmatched = [e for e in evidence if not any(e.url in m.evidence for m in ranked)]
    print(f"{len(ranked):,} messages; {with_evidence} with evidence; {written} rows -> {args.out}")
    for e in unmatched:
        print(f"  evidence matched no message: {e.url} {e.message[:60]!r} {e.file}")
    for rank, m in enumerate(ranked[: args.show], 1):
        flat = m.message.replace("\n", " ")[:70]
        print(f"{rank:4} {m.score:6.1f} {m.done or '-':>7} {m.repo:<22} {flat}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
