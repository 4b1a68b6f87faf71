"""Find wrong records before users see them: broken patterns, analysis of another error, stale links."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from bot.api_table import ApiTable
from bot.example_check import ExampleChecker, own_code_names, parse_rust, rust_blocks
from bot.families import FACTS, FamilyTable
from bot.patterns import is_valid_pattern, match_record, record_key
from bot.records import Catalog, CatalogEntry, Record
from bot.releases import ReleaseTable
from bot.rust_messages import specificity, split_format_string

ERROR, WARNING = "error", "warning"
MIN_SPECIFICITY = 4
# Below this share of the analysis' code names found in the record's own text, the analysis is about
# something else (the seed whose message is deform conv but whose analysis is q_to_device on the router).
MIN_ANALYSIS_OVERLAP = 0.34
MIN_NAMES_TO_JUDGE = 3
# Shorter advice ("Upgrade burn.") may be shared by right: only longer sentences are compared.
MIN_SHARED_TEXT = 40

# What makes a solution concrete: code in backticks, a path (`a::b`), a code name, a version, a command, a
# flag, an environment variable, a file name, a dtype, a backend or graphics API. "Check your code" has none.
_CONCRETE = re.compile(
    r"`[^`]+`|::|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b|\b\d+\.\d+"
    r"|\b(?:cargo|rustup|rustc|git|nvidia-smi|vulkaninfo)\b|(?<![\w-])--?[a-z][\w-]*"
    r"|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[\w.-]+\.(?:rs|toml|json|onnx|mpk|bin|safetensors|pt|yaml|yml)\b"
    r"|\b[a-z]+-[a-z0-9-]+\b|\b(?:[fiu](?:8|16|32|64|128)|bf16|usize|isize)\b|\b[a-z_]+!"
    r"|\b(?:wgpu|WebGPU|Vulkan|Metal|DX12|CUDA|ROCm|HIP|ndarray|tch|libtorch|candle|LibTorch|WASM|wasm)\b",
)
# Names in a firing condition that say nothing of its subject: keywords, literals and the commonest methods.
_CONDITION_NOISE = frozenset(
    (
        *("self", "Self", "mut", "ref", "as", "if", "else", "let", "match", "in", "is", "not", "and", "or"),
        *("true", "false", "None", "Some", "Ok", "Err", "len", "unwrap", "clone", "iter", "into", "to"),
        *("as_ref", "is_some", "is_none", "is_ok", "is_err", "is_empty", "contains", "get", "new", "any"),
        *("all", "usize", "isize", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f16", "f32"),
        *("f64", "bool", "str", "String", "Vec", "Option", "Result", "_", "try", "other", "num", "mut"),
    )
)
_CONDITION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# snake_case with an underscore, CamelCase with two humps, and crate names: what code in prose looks like.
_CODE_NAME = re.compile(
    r"\b(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|burn-[a-z0-9-]+|burn_[a-z0-9_]+)\b"
)
_GITHUB_BLOB = re.compile(
    r"^https://github\.com/(?P<repo>[^/]+/[^/]+)/blob/(?P<ref>[A-Za-z0-9][A-Za-z0-9._+-]*)/(?P<path>[^#]+)"
    r"(?:#L(?P<start>\d+)(?:-L(?P<end>\d+))?)?$"
)


@dataclass(frozen=True)
class Finding:
    record_id: str
    source: str
    line: int
    severity: str
    check: str
    reason: str


def _finding(entry: CatalogEntry, severity: str, check: str, reason: str) -> Finding:
    return Finding(entry.record.id, entry.source, entry.line, severity, check, reason)


def filled_message(message: str) -> str:
    """The message with each placeholder given a plain value, as the running program would print it."""
    return "X1".join(split_format_string(message))


# Names of products and projects written in CamelCase: prose, not code of the record's crates.
PRODUCT_NAMES = frozenset(
    [
        "pytorch",
        "libtorch",
        "tensorflow",
        "github",
        "gitlab",
        "opengl",
        "webgl",
        "webgpu",
        "directx",
        "cubecl",
        "javascript",
        "typescript",
        "powershell",
        "numpy",
        "scipy",
        "macos",
        "ios",
        "huggingface",
        "openai",
        "onnxruntime",
    ]
)


def code_names(text: str) -> set[str]:
    return {name.lower() for name in _CODE_NAME.findall(text)} - PRODUCT_NAMES


def site_context(releases: ReleaseTable | None, record_id: str) -> str:
    """What the harvested releases know of the code around a record's site: the functions that raise it,
    their impl types and the firing conditions, as words an analysis may rightly name."""
    if not releases:
        return ""
    parts = {
        part
        for site in releases.sites_of(record_id)
        for part in (site.function, site.impl_type, site.condition)
        if part
    }
    return " ".join(sorted(parts))


def analysis_overlap(record: Record, context: str = "") -> tuple[float, set[str]]:
    """Share of the code names in the analysis (documentation, scenarios, tags) that the record's own
    message, file path or source code mention (or `context`: `site_context`, for a harvested record whose
    source code is not kept), and the names that it does not."""
    analysis = " ".join(
        part or "" for part in (record.documentation, record.triggerScenarios, " ".join(record.tags))
    )
    names = code_names(analysis)
    evidence = " ".join(
        part or "" for part in (record.errorMessage, record.filePath, record.sourceCode, context)
    ).lower()
    evidence_compact = evidence.replace("_", "").replace("-", "")
    missing = {
        name
        for name in names
        if name not in evidence and name.replace("_", "").replace("-", "") not in evidence_compact
    }
    if not names:
        return 1.0, set()
    return 1.0 - len(missing) / len(names), missing


def analysis_is_suspect(record: Record, context: str = "") -> bool:
    """True when the record's analysis seems to describe another error: its card must not present it."""
    if not record.has_analysis:
        return False
    overlap, missing = analysis_overlap(record, context)
    return len(missing) >= MIN_NAMES_TO_JUDGE and overlap < MIN_ANALYSIS_OVERLAP


def _pattern_findings(entry: CatalogEntry) -> Iterable[Finding]:
    record = entry.record
    pattern = record.messagePattern
    if pattern:
        reason = is_valid_pattern(pattern)
        if reason:
            yield _finding(entry, ERROR, "pattern-invalid", f"messagePattern does not compile: {reason}")
            return
    elif pattern == "":
        yield _finding(entry, WARNING, "pattern-empty", "messagePattern is empty: its message is matched")
    key, segments = record_key(pattern, record.errorMessage)
    if pattern and not isinstance(key, tuple):
        yield _finding(
            entry,
            WARNING,
            "pattern-regex",
            "messagePattern is a regex, not literal text with (.+?) placeholders: it is matched with RE2 "
            "(found by an RE2 Set, then compiled), not by str.find, and has no anchor words in the index",
        )
    # `.expect()` messages are not format strings: their braces print as written.
    printed = (filled_message(record.errorMessage).strip(), record.errorMessage.strip())
    hits = (match_record(key, text) for text in printed)
    if not any(hit is not None and hit.mode == "full" for hit in hits):
        yield _finding(entry, ERROR, "pattern-mismatch", "messagePattern does not match its own errorMessage")
    if specificity(segments) < MIN_SPECIFICITY:
        yield _finding(
            entry,
            WARNING,
            "pattern-vague",
            "messagePattern is mostly placeholders: it matches almost anything",
        )


def _analysis_findings(entry: CatalogEntry, releases: ReleaseTable | None = None) -> Iterable[Finding]:
    record = entry.record
    if not record.has_analysis:
        return
    overlap, missing = analysis_overlap(record, site_context(releases, record.id))
    if len(missing) >= MIN_NAMES_TO_JUDGE and overlap < MIN_ANALYSIS_OVERLAP:
        names = ", ".join(sorted(missing)[:6])
        yield _finding(
            entry,
            ERROR,
            "analysis-mismatch",
            f"the analysis names {names}, found nowhere in the message, path or source code "
            f"({overlap:.0%} overlap): it likely describes another error",
        )
    crate = _crate_of(record.filePath)
    foreign = [tag for tag in record.tags if tag.startswith("burn-") and crate and tag != crate]
    if foreign:
        yield _finding(
            entry, WARNING, "tags-mismatch", f"tags name {', '.join(foreign)} but the file is in {crate}"
        )
    if not record.solutions:
        yield _finding(entry, WARNING, "no-solutions", "analysed record without solutions")
    elif len(record.solutions) < 2:
        yield _finding(entry, WARNING, "few-solutions", "one solution: an analysis gives at least two")
    for number, solution in enumerate(record.solutions, 1):
        if not _CONCRETE.search(solution):
            yield _finding(
                entry,
                WARNING,
                "solution-vague",
                f"solution {number} names no API, setting, command, file or version: "
                f'"{" ".join(solution.split())[:60]}"',
            )
    if not (record.exampleFix or "").strip():
        yield _finding(entry, WARNING, "no-example-fix", "analysed record without an exampleFix")


def condition_subjects(condition: str) -> set[str]:
    """The names a firing condition is about (`lhs.dims() != rhs.dims()` -> dims, lhs, rhs), without the
    keywords, literals and everyday methods that say nothing of its subject."""
    names = _CONDITION_NAME.findall(condition)
    return {name for name in names if name not in _CONDITION_NOISE and len(name) > 1}


def _spoken(name: str) -> set[str]:
    """How prose may write a code name: as is, with spaces for underscores, run together, or by one of its
    words of three letters or more that is not an everyday one (`tunable_indices` -> tunable, indices,
    `d_lhs` -> lhs), a plural also without its `s` (`exists` -> exist, `dims` -> dim)."""
    lowered = name.lower()
    words = {word for word in lowered.split("_") if len(word) >= 3 and word not in _CONDITION_NOISE}
    singular = {word[:-1] for word in (*words, lowered) if word.endswith("s") and len(word) >= 4}
    return {lowered, lowered.replace("_", " "), lowered.replace("_", ""), *words, *singular}


def _subject_findings(entry: CatalogEntry, catalog: Catalog) -> Iterable[Finding]:
    """An analysis that never names what its firing condition tests explains some other check."""
    record = entry.record
    if not record.has_analysis or not catalog.releases:
        return
    conditions = {site.condition for site in catalog.releases.sites_of(record.id) if site.condition}
    subjects = set().union(*(condition_subjects(c) for c in conditions)) if conditions else set()
    if not subjects:
        return
    text = " ".join(
        part or "" for part in (record.documentation, record.triggerScenarios, record.commonSituations)
    ).lower()
    if not any(form in text for name in subjects for form in _spoken(name)):
        shown = " / ".join(sorted(conditions))[:80]
        yield _finding(
            entry,
            WARNING,
            "doc-subject",
            f"the analysis names nothing its firing condition tests ({', '.join(sorted(subjects)[:5])} in "
            f"`{shown}`)",
        )


def _crate_of(path: str | None) -> str | None:
    parts = (path or "").split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "crates" else None


def _linked_path(record_path: str, repo: str, ref: str, releases: ReleaseTable | None) -> str:
    """The record's file as the linked release's tree has it (Burn before v0.13 kept its crates at the top
    level: the catalog's `crates/burn-tensor/src/x.rs` is `burn-tensor/src/x.rs` at v0.8.0)."""
    for release in releases.releases.get(repo, ()) if releases is not None else ():
        if ref in (release.ref, release.sha):
            return release.repository_path(record_path)
    return record_path


def _link_findings(entry: CatalogEntry, releases: ReleaseTable | None = None) -> Iterable[Finding]:
    record = entry.record
    if record.githubUrl:
        link = _GITHUB_BLOB.match(record.githubUrl)
        if link is None and not record.githubUrl.startswith("https://"):
            yield _finding(entry, WARNING, "url-shape", "githubUrl is not an https link")
        elif link is None and record.githubUrl.startswith("https://github.com/"):
            yield _finding(entry, WARNING, "url-shape", "githubUrl is not a GitHub blob link")
        elif link is not None:  # another https link (a std error's documentation) has nothing to compare
            expected = _linked_path(record.filePath or "", link.group("repo"), link.group("ref"), releases)
            if record.filePath and link.group("path") != expected:
                yield _finding(
                    entry,
                    ERROR,
                    "url-path",
                    f"githubUrl points at {link.group('path')}, not {expected}",
                )
            ref = link.group("ref")
            # A tag or branch link (`blob/v0.19.4/...`) names no commit to compare.
            is_commit = re.fullmatch(r"[0-9a-f]{7,40}", ref) is not None
            if is_commit and record.analyzedSha and not record.analyzedSha.startswith(ref):
                yield _finding(entry, WARNING, "url-sha", "githubUrl is at another commit than analyzedSha")
            start = int(link.group("start")) if link.group("start") else None
            end = int(link.group("end")) if link.group("end") else start
            line = record.lineNumber
            if start is not None and end is not None and line is not None and not start <= line <= end:
                yield _finding(entry, ERROR, "url-line", f"githubUrl lines {start}-{end} miss line {line}")
    start, end, line = record.sourceCodeStart, record.sourceCodeEnd, record.lineNumber
    if start is not None and end is not None and line is not None and not start <= line <= end:
        yield _finding(entry, ERROR, "source-range", f"sourceCode lines {start}-{end} miss line {line}")


def _version_findings(entry: CatalogEntry) -> Iterable[Finding]:
    analysed, version = entry.record.analyzedAt, entry.dataset_version
    # ISO-8601 UTC timestamps compare correctly as text.
    if analysed and version and version < analysed:
        yield _finding(
            entry, WARNING, "version-stale", f"datasetVersion {version} is older than analyzedAt {analysed}"
        )


def _code_findings(entry: CatalogEntry, checker: ExampleChecker) -> Iterable[Finding]:
    """The example fix and the claims of absence, against the releases that raise the record."""
    record = entry.record
    if not record.has_analysis:
        return
    worlds = checker.worlds(record.repo or "", record.id, record.filePath)
    own = checker.knows_repo(record.repo or "")
    if (record.exampleFix or "").strip():
        for problem in checker.check_example(record.exampleFix or "", worlds, own=own):
            yield _finding(entry, ERROR, problem.check, problem.reason)
    texts = [
        record.documentation or "",
        record.triggerScenarios or "",
        record.commonSituations or "",
        *record.solutions,
        *record.preventionTips,
    ]
    own_names = own_code_names(record.errorMessage) or own_code_names(record.errorClass)
    for problem in checker.check_claims(texts, worlds, own_names):
        yield _finding(entry, ERROR, problem.check, problem.reason)


# A format placeholder of a message: `{}`, `{dim}`, `{:?}`, `{D2}`, `{self:?}`.
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def _plain(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


def _shared_text_findings(entries: Iterable[CatalogEntry]) -> Iterable[Finding]:
    """A solution or prevention tip written word for word into records of different errors: advice that
    fits several errors this exactly rarely fixes any of them."""
    holders: dict[tuple[str, str], dict[str, CatalogEntry]] = defaultdict(dict)
    for entry in entries:
        record = entry.record
        # One error class is one error, whatever the wording of its message across Rust releases; one
        # message is one error whatever its placeholders are named (`{D}` in one release, `{D1}` in another).
        error = record.errorClass or _PLACEHOLDER.sub("{}", record.errorMessage)
        for field, texts in (("solution", record.solutions), ("prevention tip", record.preventionTips)):
            for text in texts:
                if len(_plain(text)) >= MIN_SHARED_TEXT:
                    holders[(field, _plain(text))].setdefault(error, entry)
    for (field, text), by_error in holders.items():
        if len(by_error) < 2:
            continue
        for error, entry in by_error.items():
            others = sorted(o.record.errorMessage for e, o in by_error.items() if e != error)
            yield _finding(
                entry,
                WARNING,
                "shared-text",
                f'the {field} "{text[:80]}" is also, word for word, in the records of '
                + ", ".join(f'"{" ".join(m.split())[:50]}"' for m in others[:3])
                + (f" and {len(others) - 3} more" if len(others) > 3 else ""),
            )


def _family_text_findings(families: FamilyTable, checker: ExampleChecker | None) -> Iterable[Finding]:
    """Each family's text: placeholders that no record can fill, and an example that is not Rust."""
    for family in families.families:
        groups = {name for rule in family.rules for pattern in rule.messages for name in pattern.groupindex}
        unknown = sorted(name for name in family.placeholders() if name not in (*FACTS, *groups))
        if unknown:
            shown = ", ".join("{" + name + "}" for name in unknown)
            yield Finding(
                "",
                families.source,
                0,
                ERROR,
                "family-placeholder",
                f"family {family.name!r}: {shown} is neither a record fact ({', '.join(FACTS)}) nor a named "
                "group of its message patterns (write a literal brace as {{ or }})",
            )
        example = family.texts.get("exampleFix", "").replace("{{", "{").replace("}}", "}")
        for _, code in rust_blocks(example):
            error = parse_rust(code)[2]
            if error:
                yield Finding(
                    "", families.source, 0, ERROR, "family-example", f"family {family.name!r}: {error}"
                )
        if checker is not None and example.strip():
            for problem in checker.check_example(example, checker.everywhere(), own=False):
                if problem.check != "example-syntax":
                    yield Finding(
                        "",
                        families.source,
                        0,
                        ERROR,
                        problem.check,
                        f"family {family.name!r}: {problem.reason}",
                    )


def family_findings(
    catalog: Catalog, families: FamilyTable, checker: ExampleChecker | None = None
) -> list[Finding]:
    """A record in two families, a family rule that takes no record of the catalog, and the families' text."""
    findings = list(_family_text_findings(families, checker))
    used: set[tuple[str, int]] = set()
    for entry in catalog.entries:
        record = entry.record
        found = families.classify(record)
        for family, _ in found:
            for number, rule in enumerate(family.rules):
                if rule.match(record) is not None:
                    used.add((family.name, number))
        if record.has_analysis:
            # A written analysis wins over the family and may retag the record (`expect-failed` becomes
            # `usage-error`): the rule that takes its harvested twin still takes it.
            for family in families.families:
                for number, rule in enumerate(family.rules):
                    if (family.name, number) not in used and rule.match(record, any_kind=True) is not None:
                        used.add((family.name, number))
        if len(found) > 1:
            names = ", ".join(family.name for family, _ in found)
            findings.append(
                _finding(entry, ERROR, "family-overlap", f"in {len(found)} families ({names}): it gets none")
            )
    for family in families.families:
        for number, _ in enumerate(family.rules):
            if (family.name, number) not in used:
                findings.append(
                    Finding(
                        "",
                        families.source,
                        0,
                        WARNING,
                        "family-unused",
                        f"family {family.name!r} rule {number + 1} takes no record of this catalog",
                    )
                )
    return findings


def lint_catalog(
    catalog: Catalog, api: ApiTable | None = None, families: FamilyTable | None = None
) -> list[Finding]:
    """Every finding for every record, in catalog order, then the cross-record ones. With `api` (the
    releases' public API), each analysis' example fix and claims of absence are checked against it; with
    `families`, the families' rules and text against the catalog."""
    findings: list[Finding] = []
    checker = ExampleChecker(api, catalog.releases) if api else None
    for entry in catalog.entries:
        findings.extend(_pattern_findings(entry))
        findings.extend(_analysis_findings(entry, catalog.releases))
        findings.extend(_link_findings(entry, catalog.releases))
        findings.extend(_version_findings(entry))
        findings.extend(_subject_findings(entry, catalog))
        if checker is not None:
            findings.extend(_code_findings(entry, checker))
    findings.extend(_shared_text_findings(e for e in catalog.entries if e.record.has_analysis))
    if families:
        findings.extend(family_findings(catalog, families, checker))
    # An analysed record that hides its bare baseline twin is how analyses join a harvested catalog.
    for problem in (p for p in catalog.duplicates if not p.by_design):
        findings.append(Finding("", problem.source, problem.line, WARNING, "duplicate-id", problem.reason))
    sites: dict[tuple[str, str], list[CatalogEntry]] = defaultdict(list)
    for entry in catalog.entries:
        sites[(entry.record.errorMessage, entry.record.filePath or "")].append(entry)
    for (_, path), entries in sites.items():
        if len(entries) > 1:
            lines = ", ".join(str(e.record.lineNumber) for e in entries)
            for entry in entries:
                findings.append(
                    _finding(
                        entry,
                        WARNING,
                        "same-message-same-file",
                        f"{len(entries)} records share this message in {path or 'no file'} (lines {lines}): "
                        "only the pasted line tells them apart",
                    )
                )
    return findings


def lint_draft(
    entry: CatalogEntry,
    context: Catalog,
    api: ApiTable | None = None,
    families: FamilyTable | None = None,
    existing: Record | None = None,
) -> list[Finding]:
    """What `lint_catalog` would say of `entry` were it added to `context`, without linting the rest of the
    catalog: its own checks (patterns, analysis, links, and with `api` its example and claims at the
    releases of `context`), its solutions or tips written word for word into records of other errors,
    another record of the same message and file, two families, and `existing`, the record of the catalog
    that already has its id (an analysed one it would replace)."""
    record = entry.record
    findings: list[Finding] = []
    for check in (_pattern_findings, _analysis_findings, _link_findings, _version_findings):
        findings.extend(check(entry))
    if api is not None:
        findings.extend(_code_findings(entry, ExampleChecker(api, context.releases)))
    others = [e for e in context.entries if e.record.id != record.id]
    if record.has_analysis:
        analysed = [entry, *(e for e in others if e.record.has_analysis)]
        findings.extend(f for f in _shared_text_findings(analysed) if f.record_id == record.id)
    same_site = [
        e
        for e in others
        if e.record.errorMessage == record.errorMessage
        and (e.record.filePath or "") == (record.filePath or "")
    ]
    if same_site:
        lines = ", ".join(str(e.record.lineNumber) for e in [entry, *same_site])
        findings.append(
            _finding(
                entry,
                WARNING,
                "same-message-same-file",
                f"{len(same_site) + 1} records share this message in {record.filePath or 'no file'} "
                f"(lines {lines}): only the pasted line tells them apart",
            )
        )
    if existing is not None and existing.has_analysis:
        findings.append(
            _finding(
                entry,
                WARNING,
                "duplicate-id",
                f"the catalog already has an analysed record {record.id} ({existing.errorMessage[:60]!r}): "
                "this one would replace it",
            )
        )
    if families is not None:
        found = families.classify(record)
        if len(found) > 1:
            names = ", ".join(family.name for family, _ in found)
            findings.append(
                _finding(entry, ERROR, "family-overlap", f"in {len(found)} families ({names}): it gets none")
            )
    return findings
