"""Analysis families: the advice a record gets by what its panic is (an ONNX import refusal, an API not
implemented yet, an echo of another thread's panic...) when nobody wrote an analysis for that record.

The families and their rules are data (`bot/data/families.toml`, or `X.families.toml` beside a catalog file
`X.jsonl`), so maintainers edit them and `catalog lint` checks them. A family's text is written once with
`{placeholders}` filled from the record's own facts: its message, crate, file, repository, the function that
raises it and the releases that do, and what the matching rule's named groups captured. A record in no
family, or in two, or whose facts cannot fill its family's text, gets no family analysis: precision first.
"""

from __future__ import annotations

import re
import string
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from bot.records import Record
from bot.releases import ReleaseTable, Site

EMBEDDED_FAMILIES = "data/families.toml"
FAMILIES_SUFFIX = ".families.toml"
TEXT_FIELDS = ("documentation", "triggerScenarios", "commonSituations", "exampleFix")
LIST_FIELDS = ("solutions", "preventionTips")
FACTS = ("message", "crate", "file", "repo", "function", "releases")
FAMILY_NOTE = "General advice for panics of this kind"


class FamilyError(ValueError):
    """A families file that cannot be used (its path and what is wrong, in one line)."""


@dataclass(frozen=True)
class Rule:
    """All of its parts must hold (an absent part holds): any repository of `repos`, any path pattern of
    `paths`, any message pattern of `messages`, any background tag of `kinds`."""

    repos: tuple[str, ...] = ()
    paths: tuple[re.Pattern[str], ...] = ()
    messages: tuple[re.Pattern[str], ...] = ()
    kinds: tuple[str, ...] = ()

    def match(self, record: Record, *, any_kind: bool = False) -> dict[str, str] | None:
        """The named groups the message pattern captured (empty when none), or None when it does not hold.
        `any_kind`: whatever the record's background tag (a record whose written analysis retagged it)."""
        if self.repos and (record.repo or "") not in self.repos:
            return None
        if self.kinds and not any_kind and (record.backgroundTag or "") not in self.kinds:
            return None
        path = record.filePath or ""
        if self.paths and not any(p.search(path) for p in self.paths):
            return None
        if not self.messages:
            return {}
        for pattern in self.messages:
            found = pattern.search(record.errorMessage)
            if found:
                return {k: v for k, v in found.groupdict().items() if v is not None}
        return None


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    rules: tuple[Rule, ...]
    exclude_paths: tuple[re.Pattern[str], ...]
    exclude_messages: tuple[re.Pattern[str], ...]
    texts: Mapping[str, str]
    lists: Mapping[str, tuple[str, ...]]
    tags: tuple[str, ...] = ()

    def match(self, record: Record) -> dict[str, str] | None:
        # The rules first: most records meet none of them, and the exclusions need not run then.
        for rule in self.rules:
            groups = rule.match(record)
            if groups is not None:
                break
        else:
            return None
        path = record.filePath or ""
        if any(p.search(path) for p in self.exclude_paths):
            return None
        if any(p.search(record.errorMessage) for p in self.exclude_messages):
            return None
        return groups

    def placeholders(self) -> set[str]:
        names: set[str] = set()
        for text in (*self.texts.values(), *(t for texts in self.lists.values() for t in texts)):
            # `{}` and `{:?}` (Rust's, written unescaped) are fields with an empty name: no record fills them.
            names.update(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)
        return names


@dataclass(frozen=True)
class FamilyAnalysis:
    """A family's text filled with one record's facts."""

    family: str
    title: str
    documentation: str
    triggerScenarios: str
    commonSituations: str
    solutions: tuple[str, ...]
    exampleFix: str
    preventionTips: tuple[str, ...]
    tags: tuple[str, ...]


@dataclass(frozen=True)
class RecordFacts:
    """What a family's text may say of a record; None where it is not known."""

    message: str
    crate: str
    file: str
    repo: str
    function: str | None = None
    releases: str | None = None

    def values(self, groups: Mapping[str, str]) -> dict[str, str]:
        known = {name: getattr(self, name) for name in FACTS if getattr(self, name)}
        return {**known, **groups}


def crate_of_path(path: str, repo: str) -> str:
    """`crates/burn-tensor/src/x.rs` -> burn-tensor; `wgpu-core/src/x.rs` -> wgpu-core; `src/x.rs` -> the
    repository's name."""
    parts = path.split("/")
    if len(parts) > 2 and parts[0] == "crates":
        return parts[1]
    if len(parts) > 1 and parts[0] != "src":
        return parts[0]
    return repo.rsplit("/", 1)[-1]


def _one_line(message: str, limit: int = 160) -> str:
    line = " ".join(message.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass
class FamilyTable:
    families: list[Family] = field(default_factory=list)
    source: str = ""
    _by_repo_kind: dict[tuple[str, str], list[Family]] = field(default_factory=dict, repr=False)
    _cached_for: int = field(default=0, repr=False)

    def __bool__(self) -> bool:
        return bool(self.families)

    def _candidates(self, repo: str, kind: str) -> list[Family]:
        """The families with a rule that a record of this repository and background tag may meet (most
        rules name either): the others need no pattern run. Kept per (repo, tag) pair."""
        if self._cached_for != len(self.families):  # families were added since: start again
            self._by_repo_kind.clear()
            self._cached_for = len(self.families)
        key = (repo, kind)
        found = self._by_repo_kind.get(key)
        if found is None:
            found = self._by_repo_kind[key] = [
                family
                for family in self.families
                if any(
                    (not rule.repos or repo in rule.repos) and (not rule.kinds or kind in rule.kinds)
                    for rule in family.rules
                )
            ]
        return found

    def classify(self, record: Record) -> list[tuple[Family, dict[str, str]]]:
        """Every family whose rules hold for the record, with what their patterns captured."""
        found = []
        for family in self._candidates(record.repo or "", record.backgroundTag or ""):
            groups = family.match(record)
            if groups is not None:
                found.append((family, groups))
        return found

    def analysis(self, record: Record, facts: RecordFacts) -> FamilyAnalysis | None:
        """The record's family text, filled; None unless exactly one family holds and the record's facts
        fill its text (a record whose function or releases are not known stays out of a text that names
        them)."""
        found = self.classify(record)
        if len(found) != 1:
            return None
        family, groups = found[0]
        return fill(family, facts.values(groups))

    def analysis_in(self, record: Record, releases: ReleaseTable) -> FamilyAnalysis | None:
        """`analysis` with the record's facts read from the catalog's release table."""
        if not self.families or record.has_analysis:
            return None
        return self.analysis(record, facts_in(record, releases))


class _Strict(dict[str, str]):
    def __missing__(self, key: str) -> str:
        raise KeyError(key)


def fill(family: Family, values: Mapping[str, str]) -> FamilyAnalysis | None:
    """The family's text with `values` put in; None when a placeholder has no value."""
    strict = _Strict(values)
    try:
        texts = {name: text.format_map(strict).strip() for name, text in family.texts.items()}
        lists = {
            name: tuple(t.format_map(strict).strip() for t in items) for name, items in family.lists.items()
        }
    except (KeyError, IndexError, ValueError):
        return None
    return FamilyAnalysis(
        family=family.name,
        title=family.title,
        documentation=texts.get("documentation", ""),
        triggerScenarios=texts.get("triggerScenarios", ""),
        commonSituations=texts.get("commonSituations", ""),
        solutions=lists.get("solutions", ()),
        exampleFix=texts.get("exampleFix", ""),
        preventionTips=lists.get("preventionTips", ()),
        tags=family.tags,
    )


def missing_facts(family: Family, facts: RecordFacts, groups: Mapping[str, str]) -> list[str]:
    """The placeholders of the family's text that the record cannot fill."""
    values = facts.values(groups)
    return sorted(name for name in family.placeholders() if name not in values)


def release_span(sites: Sequence[Site], crate: str) -> str | None:
    """`burn-tensor 0.13.0 to 0.22.0-pre.2`: the crate's versions at the first and the last release that
    raise the record (sites oldest first), or the releases' names where the crate has no version."""
    if not sites:
        return None
    first, last = sites[0], sites[-1]
    start = first.version or first.release.name
    end = last.version or last.release.name
    return f"{crate} {start}" if start == end else f"{crate} {start} to {end}"


def facts_in(record: Record, releases: ReleaseTable) -> RecordFacts:
    """A record's facts: its function and crate at the newest release that raises it, and the span."""
    sites = releases.sites_of(record.id)
    newest = sites[-1] if sites else None
    crate = (newest.crate if newest is not None else None) or crate_of_path(
        record.filePath or "", record.repo or ""
    )
    function = newest.function if newest is not None else None
    return record_facts(record, function, release_span(sites, crate), crate)


def record_facts(
    record: Record, function: str | None, releases: str | None, crate: str | None
) -> RecordFacts:
    path = record.filePath or ""
    repo = record.repo or ""
    return RecordFacts(
        message=_one_line(record.errorMessage),
        crate=crate or crate_of_path(path, repo),
        file=path,
        repo=repo,
        function=function,
        releases=releases,
    )


# ---- reading a families file ----------------------------------------------------------------------------


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise FamilyError(f"{where}: expected a string or a list of strings")


def _patterns(value: Any, where: str) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for text in _strings(value, where):
        try:
            compiled.append(re.compile(text))
        except re.error as exc:
            raise FamilyError(f"{where}: {text!r} is not a regular expression ({exc})") from exc
    return tuple(compiled)


def parse_families(text: str, source: str) -> FamilyTable:
    """The families of a TOML text (`[[family]]` tables, see bot/data/families.toml); FamilyError names the
    first problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FamilyError(f"{source}: not TOML ({exc})") from exc
    families: list[Family] = []
    names: set[str] = set()
    for index, raw in enumerate(data.get("family", []), start=1):
        where = f"{source}: family {index}"
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
            raise FamilyError(f"{where}: needs a name")
        name = raw["name"]
        where = f"{source}: family {name!r}"
        if name in names:
            raise FamilyError(f"{where}: defined twice")
        names.add(name)
        rules = []
        for number, rule in enumerate(raw.get("rule", []), start=1):
            at = f"{where} rule {number}"
            if not isinstance(rule, dict):
                raise FamilyError(f"{at}: expected a table")
            unknown = set(rule) - {"repos", "paths", "messages", "kinds"}
            if unknown:
                raise FamilyError(f"{at}: unknown keys {', '.join(sorted(unknown))}")
            rules.append(
                Rule(
                    repos=_strings(rule.get("repos"), at),
                    paths=_patterns(rule.get("paths"), at),
                    messages=_patterns(rule.get("messages"), at),
                    kinds=_strings(rule.get("kinds"), at),
                )
            )
        if not rules:
            raise FamilyError(f"{where}: has no [[family.rule]]")
        texts = {}
        for key in TEXT_FIELDS:
            value = raw.get(key, "")
            if not isinstance(value, str):
                raise FamilyError(f"{where}: {key} must be a string")
            texts[key] = value
        lists = {key: _strings(raw.get(key), f"{where}: {key}") for key in LIST_FIELDS}
        if not texts["documentation"] or len(lists["solutions"]) < 2:
            raise FamilyError(f"{where}: needs documentation and at least two solutions")
        families.append(
            Family(
                name=name,
                title=str(raw.get("title") or name),
                rules=tuple(rules),
                exclude_paths=_patterns(raw.get("exclude_paths"), f"{where}: exclude_paths"),
                exclude_messages=_patterns(raw.get("exclude_messages"), f"{where}: exclude_messages"),
                texts=texts,
                lists=lists,
                tags=_strings(raw.get("tags"), f"{where}: tags"),
            )
        )
    return FamilyTable(families, source)


def default_families() -> FamilyTable:
    """The embedded families file (an empty table when it is not there)."""
    resource = resources.files("bot").joinpath(EMBEDDED_FAMILIES)
    if not resource.is_file():
        return FamilyTable()
    return parse_families(resource.read_text(encoding="utf-8"), "embedded families")


def families_files(paths: Sequence[Path | str]) -> list[Path]:
    """`X.families.toml` beside each catalog file `X.jsonl[.gz]`, and those in the given folders."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(sorted(path.rglob(f"*{FAMILIES_SUFFIX}")))
        elif path.is_file():
            stem = path.name.removesuffix(".gz").removesuffix(".jsonl").removesuffix(".json")
            beside = path.with_name(stem + FAMILIES_SUFFIX)
            if beside.is_file():
                found.append(beside)
    return list(dict.fromkeys(found))


def load_families(paths: Iterable[Path | str]) -> FamilyTable:
    """The families beside the catalog paths, in order, else the embedded ones. FamilyError on a bad file."""
    files = families_files([p for p in paths if str(p) != "default"])
    if not files:
        return default_families()
    table = FamilyTable(source=", ".join(str(f) for f in files))
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise FamilyError(f"{file}: cannot read ({exc})") from exc
        table.families.extend(parse_families(text, str(file)).families)
    return table
