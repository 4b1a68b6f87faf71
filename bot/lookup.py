"""The one object adapters hold: a catalog, its index, cards, and the JSON shape of a lookup."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import Any

from bot.autocomplete import Autocomplete, SuggestFields
from bot.card import Card, anchored, build_card, card_json
from bot.extract import Panic
from bot.families import FamilyAnalysis, FamilyTable, default_families
from bot.harvest import crate_of, github_url
from bot.history import history_json, last_successor, record_history, successor
from bot.lint import analysis_is_suspect, site_context
from bot.matcher import LookupResult, Match, Matcher, Reason
from bot.paths import common_suffix_length, path_parts
from bot.prose_search import ProseIndex
from bot.reading import PasteReading, read_paste
from bot.records import Catalog, Record
from bot.releases import CheckoutHint, Release, ReleaseTable, Site, VersionHint, hint_from_path
from bot.rust_messages import split_format_string

# A panic at the exact line of a site of the release it names, with no message matched: the answer, never
# posted unasked.
SITE_CONFIDENCE = 0.7
# Matches this close in confidence to the best one are told apart by the release the paste names.
CONTENDER_MARGIN = 0.1
FAR = 1 << 30
RELEASE_EXTRA_CANDIDATES = 5
FAMILIES_KEPT = 8_192  # records whose family analysis a lookup keeps made
# A harvested pattern with fewer literal characters than this (`wgpu error: {err}`) says little of what
# happened: an analysed record whose whole, more literal pattern matched explains the paste better.
GENERIC_PATTERN_SPECIFICITY = 12
RUNTIME_TAG = "rust-runtime-panic"
# Runtime records whose advice does not depend on what failed: never posted unasked.
GENERIC_RUNTIME_CLASSES = frozenset({None, "Result", "Option"})
# A nearby record under this confidence says nothing: it is not listed (rows of 0 % read as noise).
MIN_SHOWN_CONFIDENCE = 0.05
# Autocomplete reads at most this much of what is typed.
AUTOCOMPLETE_QUERY_MAX = 1_000
# Its guesses (`Matcher.typed_guesses`): at most GUESSES records; a typed word brings at most GUESS_BUDGET
# candidates, the GUESS_COMPARED with the most of the typed words are compared as text, and those less similar
# than GUESS_LEAST_SIMILARITY are left out (what a lookup shows at 5 % confidence).
GUESSES = 10
GUESS_BUDGET = 2_000
GUESS_COMPARED = 20
GUESS_LEAST_SIMILARITY = 0.39
# A typed query with no message match is also searched in the words of the analyses written for records
# (`bot.prose_search`): at most PROSE_HITS records, each at least PROSE_LEAST_SHARE of the best one's BM25
# score (room is made for them in the `limit`), at a confidence of at most PROSE_CONFIDENCE (scaled by the
# share), ranked with the weak message matches by confidence: never an answer, never posted.
PROSE_HITS = 3
PROSE_LEAST_SHARE = 0.3
PROSE_CONFIDENCE = 0.3
PROSE_MIN_CONFIDENCE = 0.01


class PanicLookup:
    """Built once per catalog at start-up; `lookup` and `card` are cheap and never raise on text."""

    prose_search = True
    """Whether a typed query with no message match is also searched in the analyses' words (a benchmark
    turns it off to compare)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.matcher = Matcher(catalog.records)
        self._versions: Mapping[str, str | None] = {
            entry.record.id: entry.dataset_version for entry in catalog.entries
        }
        self._positions = {record.id: index for index, record in enumerate(self.matcher.records)}
        # Which analyses seem to describe another error: judged per record when its card is made (reading
        # every analysis at start-up costs ~0.1 ms each), all at once when a prebuilt file is written.
        self._under_review: frozenset[str] | None = None
        self._reviewed: dict[str, bool] = {}
        self._families: FamilyTable | None = catalog.families
        self._families_made: dict[str, FamilyAnalysis | None] = {}
        # What autocomplete reads of every record, when stored apart (a prebuilt file): else the records.
        self._suggest_fields: Callable[[], SuggestFields] | None = None
        self._dataset_versions: list[str] | None = None  # made on first use
        self._ids: list[str] | None = None  # record ids by position, made on first use

    @classmethod
    def from_prebuilt(
        cls,
        catalog: Catalog,
        matcher: Matcher,
        positions: dict[str, int],
        versions: Mapping[str, str | None],
        under_review: frozenset[str],
        suggest_fields: Callable[[], SuggestFields] | None = None,
        dataset_versions: list[str] | None = None,
    ) -> PanicLookup:
        """A lookup from a prebuilt file's state (`bot.prebuilt.read_prebuilt`): nothing is recomputed from
        the records, which the matcher reads lazily. `catalog` holds the release table and `covered`, not
        the entries."""
        lookup = cls.__new__(cls)
        lookup.catalog = catalog
        lookup.matcher = matcher
        lookup._versions = versions
        lookup._positions = positions
        lookup._under_review = under_review
        lookup._reviewed = {}
        lookup._families = catalog.families
        lookup._families_made = {}
        lookup._suggest_fields = suggest_fields
        lookup._dataset_versions = dataset_versions
        lookup._ids = None
        return lookup

    def lookup(self, text: str, limit: int = 5) -> LookupResult:
        return self.lookup_reading(read_paste(text, versions=bool(self.catalog.releases)), limit)

    def lookup_reading(self, reading: PasteReading, limit: int = 5) -> LookupResult:
        """`lookup` of a paste already read (`bot.reading.read_paste`, maybe in another process)."""
        if not self.catalog.releases:
            result = self.matcher.lookup_extraction(reading.extraction, limit=limit)
            if result.auto_reply and result.best is not None and is_runtime(result.best.record):
                result = dataclasses.replace(result, auto_reply=False)  # no harvested site to name
            return self._with_prose(dataclasses.replace(result, matches=_shown(result.matches)), limit)
        # A few more candidates than shown: the site of the pasted release may rank just below them.
        result = self.matcher.lookup_extraction(reading.extraction, limit=limit + RELEASE_EXTRA_CANDIDATES)
        if not result.panics:
            return result
        hints = reading.version_hints
        if hints:
            result = dataclasses.replace(result, version_hints=hints)
        result = self._cause_by_site(result)
        result = self._by_release(result)
        result = self._prefer_analysed(result)
        result = self._prefer_current(result)
        if result.auto_reply and result.best is not None and is_runtime(result.best.record):
            result = dataclasses.replace(result, auto_reply=self._runtime_may_auto_reply(result))
        answered = result.answer_panic
        if result.auto_reply and answered is not None and result.panics[answered].follow_on:
            # An echo answered because no cause had a record: the card may be right, but it is not the
            # answer to what went wrong, so it is never posted unasked.
            result = dataclasses.replace(result, auto_reply=False)
        return self._with_prose(dataclasses.replace(result, matches=_shown(result.matches)[:limit]), limit)

    @property
    def under_review(self) -> frozenset[str]:
        """The ids of the records whose analysis seems to describe another error (the card leaves it out)."""
        if self._under_review is None:
            self._under_review = frozenset(r.id for r in self.matcher.records if self.is_under_review(r.id))
        return self._under_review

    def is_under_review(self, record_id: str) -> bool:
        """Whether this record's analysis seems to describe another error (`analysis_is_suspect`)."""
        if self._under_review is not None:
            return record_id in self._under_review
        known = self._reviewed.get(record_id)
        if known is None:
            position = self._positions.get(record_id)
            record = self.matcher.records[position] if position is not None else None
            known = bool(
                record is not None
                and record.has_analysis
                and analysis_is_suspect(record, site_context(self.catalog.releases, record_id))
            )
            self._reviewed[record_id] = known
        return known

    @functools.cached_property
    def prose_index(self) -> ProseIndex:
        """BM25 over the analyses written for records (not those under review), built on the first typed
        query that needs it: only the analysed records are read."""
        analysed = self.suggest_fields.analysed
        records = self.matcher.records
        chosen = ((position, records[position]) for position in range(len(analysed)) if analysed[position])
        return ProseIndex((p, r) for p, r in chosen if r.id not in self.under_review)

    def _with_prose(self, result: LookupResult, limit: int) -> LookupResult:
        """A typed query no message answers: the records whose analysis holds its words (a message match
        among them gains the reason), ranked with the message matches by confidence. Never an answer."""
        if (
            not self.prose_search
            or len(result.panics) != 1
            or result.panics[0].kind != "query"
            or result.best is not None
            or limit <= 0
        ):
            return result
        hits = self.prose_index.search(result.panics[0].message, PROSE_HITS, PROSE_LEAST_SHARE)
        if not hits:
            return result
        matches = list(result.matches)
        at = {match.record_index: index for index, match in enumerate(matches)}
        extra = []
        for hit in hits:
            reason = Reason("analysis", "words of its analysis: " + ", ".join(hit.shared))
            if hit.record_index in at:
                index = at[hit.record_index]
                matches[index] = dataclasses.replace(
                    matches[index], reasons=(*matches[index].reasons, reason)
                )
            else:
                extra.append((hit, reason))
        if not extra:
            return dataclasses.replace(result, matches=tuple(matches))
        kept = matches[: max(0, min(len(matches), limit - len(extra)))]
        for hit, reason in extra[:limit]:
            confidence = round(max(PROSE_MIN_CONFIDENCE, PROSE_CONFIDENCE * hit.relative), 3)
            record = self.matcher.records[hit.record_index]
            kept.append(Match(record, hit.score, confidence, (reason,), 0, False, hit.record_index))
        ranked = sorted(kept, key=lambda match: -match.confidence)
        if ranked and ranked[0].known:  # the first of a list is its answer: a typed question has none
            ranked = kept
        return dataclasses.replace(result, matches=tuple(ranked))

    def _cause_by_site(self, result: LookupResult) -> LookupResult:
        """A cause whose message no record matched (mangled by a progress bar, reworded since) but whose
        pasted line is an exact site of the release the paste names is answered there, before any echo."""
        answered = result.answer_panic
        if answered is None or not result.panics[answered].follow_on:
            return result
        for index, panic in enumerate(result.panics):
            if panic.follow_on or index == answered:
                continue
            hints = _paste_hints(panic, result.version_hints)
            if not hints or panic.location is None:
                continue
            found = self._exact_sites(panic, hints)
            if len(found) == 1:
                site = self._site_in_release(found[0], hints, panic.location.line)
                where = f"{site.crate} {site.version or site.release.name}" if site else "that release"
                reason = Reason("site", f"same file and line as the site in {where}")
                answer = dataclasses.replace(
                    found[0], panic_index=index, known=True, confidence=SITE_CONFIDENCE, reasons=(reason,)
                )
                return dataclasses.replace(result, matches=(answer,), answer_panic=index, auto_reply=False)
        return result

    def _prefer_analysed(self, result: LookupResult) -> LookupResult:
        """A bare harvested record that won on location (`wgpu error: {err}` in the file that raises every
        wgpu error) gives way to an analysed record whose whole, more literal pattern also matched."""
        best = result.best
        if best is None or best.record.has_analysis:
            return result
        specific = self.matcher.specificity(best.record_index)
        if specific >= GENERIC_PATTERN_SPECIFICITY:
            return result  # a specific message at its own site: the analysed generic one does not replace it
        for position, match in enumerate(result.matches[1:], start=1):
            if (
                match.known
                and match.record.has_analysis
                and match.panic_index == best.panic_index
                and _full_pattern_match(match)
                and self.matcher.specificity(match.record_index) > specific
            ):
                panic = result.panics[match.panic_index]
                auto = self.matcher.may_auto_reply(panic, match)
                matches = (match, *result.matches[:position], *result.matches[position + 1 :])
                return dataclasses.replace(result, matches=matches, auto_reply=auto)
        return result

    def _prefer_current(self, result: LookupResult) -> LookupResult:
        """With no release named, of two records of one message (a file that moved), the one still raised
        in the newest release comes first: `burn-ir/src/handle.rs`, not the `burn-fusion` file gone since
        v0.14."""
        best = result.best
        if best is None or best.panic_index >= len(result.panics):
            return result
        panic = result.panics[best.panic_index]
        releases = self.catalog.releases
        if panic.location is not None or releases.gone_since(best.record.id) is None:
            return result
        literal = _literal_text(best.record)
        for position, match in enumerate(result.matches[1:], start=1):
            if (
                match.known
                and match.record.repo == best.record.repo
                and _literal_text(match.record) == literal  # `{:?}` and `{id:?}` alike
                and releases.sites_of(match.record.id)
                and releases.gone_since(match.record.id) is None
            ):
                matches = (match, *result.matches[:position], *result.matches[position + 1 :])
                return dataclasses.replace(result, matches=matches)
        return result

    def _runtime_may_auto_reply(self, result: LookupResult) -> bool:
        """A runtime panic's card is posted unasked only when it is specific to what happened: a record
        refined by the error's type (not a bare unwrap, not an echo of another panic), raised at a site
        the harvested sources name (file and function of a known release)."""
        best = result.best
        if best is None:
            return False
        record = best.record
        extra = record.model_extra or {}
        if extra.get("followOn") or record.errorClass in GENERIC_RUNTIME_CLASSES:
            return False
        site = self.site(result, best)
        # A release guessed from the newest lines may name another function: only a release the paste
        # names makes the site known.
        return (
            site is not None
            and site.repo is not None
            and site.function is not None
            and site.in_pasted_release is True
        )

    def _by_release(self, result: LookupResult) -> LookupResult:
        """What the release a paste reveals decides. Among the messages that match about as well, the one
        that release raises in that file, nearest the pasted line there, comes first; a panic at the exact
        line of a release's site is that site when no message of a file matched (`{}`, a message reworded
        since); and a record that release does not have is never posted unasked."""
        index = result.answer_panic if result.answer_panic is not None else 0
        if not result.matches or index >= len(result.panics):
            return result
        panic = result.panics[index]
        hints = _paste_hints(panic, result.version_hints)
        if not hints:
            return result
        matches = [m for m in result.matches if m.panic_index == index]
        if len(matches) != len(result.matches):
            return result
        line = panic.location.line if panic.location is not None else None
        facts = [self._release_facts(match, hints, panic, line) for match in matches]
        top = matches[0]
        if top.known and not top.record.filePath and _full_pattern_match(top):
            return result  # std's own message, matched whole: the site cannot be a literal panic of a crate
        if top.known and top.record.filePath:
            contenders = [
                position
                for position, match in enumerate(matches)
                if match.known and match.confidence >= top.confidence - CONTENDER_MARGIN
            ]
            if all(facts[position][0] == 1 for position in contenders):
                # The paste names no harvested release of these records (a checkout between releases, a
                # version the catalog lacks, another crate's version): the answer stands as matched.
                return result
            best = min(contenders, key=lambda position: (*facts[position], position))
            present = [p for p in contenders if facts[p][0] == 0]
            if best == 0 and facts[0][0] == 0:
                exact = facts[0][1] == 0 or len(present) == 1
                return (
                    result
                    if exact or not result.auto_reply
                    else dataclasses.replace(result, auto_reply=False)
                )
            chosen = matches[best]
            exact = facts[best][0] == 0 and (facts[best][1] == 0 or len(present) == 1)
            auto = exact and self.matcher.may_auto_reply(panic, chosen)
            reordered = (chosen, *matches[:best], *matches[best + 1 :])
            return dataclasses.replace(result, matches=reordered, auto_reply=auto)
        if line is None:
            return result
        known_ids = {m.record.id for m in matches}
        extra = [
            dataclasses.replace(m, panic_index=index)
            for m in self._exact_sites(panic, hints)
            if m.record.id not in known_ids
        ]
        if extra:
            matches = [*matches, *extra]
            facts += [self._release_facts(match, hints, panic, line) for match in extra]
        for position, match in enumerate(matches):
            if facts[position][:2] != (0, 0):
                continue
            site = self._site_in_release(match, hints, line)
            name = (site.version or site.release.name) if site else ""
            crate = site.crate if site else ""
            reason = Reason("site", f"same file and line as the site in {crate} {name}")
            answer = dataclasses.replace(
                match, known=True, confidence=SITE_CONFIDENCE, reasons=(*match.reasons, reason)
            )
            reordered = (answer, *matches[:position], *matches[position + 1 :])
            return dataclasses.replace(result, matches=reordered, answer_panic=index, auto_reply=False)
        return result

    def _release_facts(
        self, match: Match, hints: list[VersionHint | CheckoutHint], panic: Panic, line: int | None
    ) -> tuple[int, int]:
        """(0 the pasted release has the site, 1 the paste names no release of it, 2 it does not have it;
        the distance from the pasted line to the site's line in that release, when in the pasted file)."""
        record = match.record
        sites = self.catalog.releases.sites_of(record.id)
        if not sites or record.repo is None:
            return (1, FAR)
        releases = self.catalog.releases.candidates(record.repo, sites[-1].crate, hints)
        if not releases:
            return (1, FAR)
        site = self.catalog.releases.site_in(record.id, releases, line)
        if site is None:
            return (2, FAR)
        if line is None or not self._same_file(match, panic):
            return (0, FAR)
        return (0, abs(site.line - line))

    def _site_in_release(
        self, match: Match, hints: list[VersionHint | CheckoutHint], line: int | None = None
    ) -> Site | None:
        record = match.record
        sites = self.catalog.releases.sites_of(record.id)
        if not sites or record.repo is None:
            return None
        releases = self.catalog.releases.candidates(record.repo, sites[-1].crate, hints)
        return self.catalog.releases.site_in(record.id, releases, line)

    def _exact_sites(self, panic: Panic, hints: list[VersionHint | CheckoutHint]) -> list[Match]:
        """Records whose site, in the release the paste names, is at the pasted file and line."""
        location = panic.location
        if location is None or location.line is None:
            return []
        releases = self.catalog.releases
        hint = hint_from_path(location.raw_path)
        crate = hint.crate if isinstance(hint, VersionHint) else None
        found = []
        for record_id in releases.records_at(location.path, crate):
            position = self._positions.get(record_id)
            sites = releases.sites_of(record_id)
            if position is None or not sites:
                continue
            record = self.matcher.records[position]
            if record.repo is None:
                continue
            candidates = releases.candidates(record.repo, sites[-1].crate, hints)
            site = releases.site_in(record_id, candidates, location.line)
            if site is not None and site.line == location.line:
                found.append(Match.for_record(record, position, panic_index=0))
        return found

    @staticmethod
    def _same_file(match: Match, panic: Panic) -> bool:
        if panic.location is None or not match.record.filePath:
            return False
        pasted = path_parts(panic.location.path)
        own = path_parts(match.record.filePath)
        return common_suffix_length(pasted, own) >= min(len(own), 3)

    @property
    def releases(self) -> ReleaseTable:
        return self.catalog.releases

    def site(self, result: LookupResult, match: Match | None = None) -> AnswerSite | None:
        """Where the answered panic is raised, in the release the paste reveals (else the newest one that
        has the site): repo, crate, version, file, line, function, and a link at that release."""
        chosen = match or result.best
        if chosen is None:
            # No record: still where the panic was raised, when the paste says it.
            index = result.answer_panic if result.answer_panic is not None else result.root_panic
            if index is None or index >= len(result.panics):
                return None
            return pasted_site(self.catalog.releases, result.panics[index], result.version_hints)
        panic = result.panics[chosen.panic_index] if chosen.panic_index < len(result.panics) else None
        if chosen.record.filePath is None and panic is not None:
            # A runtime panic's record names no file: the site is where the paste says it was raised.
            return pasted_site(self.catalog.releases, panic, result.version_hints)
        return answer_site(
            self.catalog.releases,
            chosen.record,
            panic,
            result.version_hints,
            record_of=self.record,
            same_message=self.same_message_ids,
        )

    def dataset_version(self, record_id: str) -> str | None:
        return self._versions.get(record_id)

    def dataset_versions(self) -> list[str]:
        """The data set versions of the catalog's records (a prebuilt file lists them)."""
        if self._dataset_versions is None:
            self._dataset_versions = sorted({version for version in self._versions.values() if version})
        return list(self._dataset_versions)

    @functools.cached_property
    def suggest_fields(self) -> SuggestFields:
        """Every record's message, tags and whether it is analysed, by position: from a prebuilt file's own
        section when there is one (its records stay on disk), else from the records."""
        if self._suggest_fields is not None:
            return self._suggest_fields()
        return SuggestFields.of(self.matcher.records)

    @functools.cached_property
    def autocomplete(self) -> Autocomplete:
        """The index that suggests records while someone types (built on first use, once per catalog)."""
        return Autocomplete(self.matcher.records, self.suggest_fields)

    def unmatched(self, matched: Container[str], limit: int) -> tuple[list[Record], int]:
        """The records whose id is not in `matched`, analysed ones first (in catalog order within each): the
        first `limit` of them, and how many there are. Only the records returned are read."""
        analysed = self.suggest_fields.analysed
        ids = [""] * len(analysed)
        for record_id, position in self._positions.items():
            ids[position] = record_id
        order = [p for p in range(len(ids)) if analysed[p]] + [p for p in range(len(ids)) if not analysed[p]]
        never = [position for position in order if ids[position] not in matched]
        return [self.matcher.records[position] for position in never[:limit]], len(never)

    def suggest(self, current: str, limit: int = 25) -> list[Record]:
        """Records for what someone is typing: messages containing it (earliest first), tags starting with
        it, then the lookup's best guesses; with nothing typed, analysed records first."""
        query = " ".join(current[:AUTOCOMPLETE_QUERY_MAX].split()).lower()
        if not query:
            return self.autocomplete.analysed_first(limit)
        picked: dict[str, Record] = {}
        for record in self.autocomplete.by_message(query, limit):
            picked.setdefault(record.id, record)
        if len(picked) == limit:
            return list(picked.values())
        # The first `limit` tagged are enough: one of them that is also a message found leaves room for one
        # that is not. (A prebuilt catalog reads a record from disk when it is asked for: few are.)
        for record in self.autocomplete.by_tag(query, limit):
            picked.setdefault(record.id, record)
            if len(picked) == limit:
                return list(picked.values())
        # Fewer than `limit` hold what is typed: guesses (a typo, words in another order) follow. Not a
        # lookup, which at a million records may take 20 ms a keystroke: the records with the most of the
        # typed words, in bounded time (`Matcher.typed_guesses`).
        guesses = self.matcher.typed_guesses(
            query, GUESSES, GUESS_BUDGET, GUESS_COMPARED, GUESS_LEAST_SIMILARITY
        )
        for record in guesses:
            picked.setdefault(record.id, record)
            if len(picked) == limit:
                break
        return list(picked.values())

    def record_ids(self) -> Iterable[str]:
        return self._positions.keys()

    def record(self, record_id: str) -> Record | None:
        position = self._positions.get(record_id)
        return None if position is None else self.matcher.records[position]

    def same_message_ids(self, record_id: str) -> list[str]:
        """The ids of the other records that print the same words as `record_id` (any repository, file or
        release; placeholders compared as equal), read from the index without reading a record."""
        position = self._positions.get(record_id)
        if position is None:
            return []
        ids = self._ids
        if ids is None:
            ids = [""] * len(self._positions)
            for known, at in self._positions.items():
                ids[at] = known
            self._ids = ids
        return [ids[other] for other in self.matcher.same_message(position) if other != position]

    def card_for_record(self, record_id: str, confidence: float, pasted: str | None = None) -> Card | None:
        """The card of a record named by id (a button pressed later), or None when it is gone."""
        position = self._positions.get(record_id)
        if position is None:
            return None
        record = self.matcher.records[position]
        match = Match(record, 0.0, confidence, (), 0, True, position)
        return build_card(
            match,
            pasted,
            self.dataset_version(record_id),
            under_review=self.is_under_review(record_id),
            family=self.family(record),
        )

    def answer_json(self, result: LookupResult) -> dict[str, Any]:
        """`result_json` with the answer's site and card (the site worked out once for both)."""
        site = self.site(result)
        best = result.best
        card = self._card(result, best, site) if best is not None else None
        history = self.history_json(best.record.id) if best is not None else None
        return result_json(result, site, card, history)

    def history_json(self, record_id: str) -> dict[str, Any] | None:
        """The record's history across the harvested releases, as data (`bot.history`)."""

        def literal_of(other: str) -> str | None:
            found = self.record(other)
            return _literal_text(found) if found is not None else None

        return history_json(record_history(self.catalog.releases, record_id, literal_of))

    @property
    def families(self) -> FamilyTable:
        """The catalog's families, else the embedded ones: read when a card first needs them (parsing the
        embedded file takes ~45 ms, which a start-up that answers no paste should not pay)."""
        if self._families is None:
            self._families = default_families()
        return self._families

    def family(self, record: Record) -> FamilyAnalysis | None:
        """The analysis of the record's family, filled with its facts (None when it has its own). Kept per
        record (a few thousand at most): a service answers the same panics again and again."""
        if record.has_analysis:
            return None  # its own analysis wins: the families need not even be read
        if record.id in self._families_made:
            return self._families_made[record.id]
        found = self.families.analysis_in(record, self.catalog.releases)
        if len(self._families_made) >= FAMILIES_KEPT:
            self._families_made.clear()
        self._families_made[record.id] = found
        return found

    def card(self, result: LookupResult, match: Match | None = None) -> Card | None:
        """The card for `match` (default: the answer); None when the paste has no known record."""
        chosen = match or result.best
        if chosen is None:
            return None
        return self._card(result, chosen, self.site(result, chosen))

    def _card(self, result: LookupResult, chosen: Match, site: AnswerSite | None) -> Card:
        panic = result.panics[chosen.panic_index] if chosen.panic_index < len(result.panics) else None
        pasted = panic.message if panic is not None and panic.kind != "query" else None
        record_id = chosen.record.id
        echoes = tuple(result.panics[index].message for index in result.consequences)
        family = self.family(chosen.record)
        if site is None:
            return build_card(
                chosen,
                pasted,
                self.dataset_version(record_id),
                under_review=self.is_under_review(record_id),
                consequences=echoes,
                family=family,
            )
        return build_card(
            chosen,
            pasted,
            self.dataset_version(record_id),
            under_review=self.is_under_review(record_id),
            where=site.where,
            fires_when=site.fires_when or "",
            release_note=site.note,
            condition_note=site.condition_note,
            source_url=site.url or "",
            source=_source_text(chosen.record, site),
            consequences=echoes,
            panics_doc=site.panics_doc or "",
            family=family,
            first_solution=site.upgrade or "",
        )


@dataclasses.dataclass(frozen=True)
class AnswerSite:
    """Where a panic is raised, as the card's "where" line and the JSON `site` say it."""

    repo: str | None
    crate: str | None
    version: str | None
    release: str | None
    file: str | None
    line: int | None
    function: str | None
    url: str | None
    fires_when: str | None = None
    panics_doc: str | None = None
    in_pasted_release: bool | None = None
    """True/False when the paste names a release (has that release the site?); None when it names none."""
    gone_since: str | None = None
    """The first release (crate version) after the newest one with the site, when there is one."""
    note: str = ""
    upgrade: str | None = None
    """The release that no longer raises the message and the commit that took it out, as a solution."""
    condition_note: str = ""
    """The change of its firing condition nearest the release shown (`condition_note`), for the card."""

    @property
    def where(self) -> str:
        """`burn-fusion 0.21.0, index.rs:49 in StreamIndex::insert` (what is known of it)."""
        head = " ".join(part for part in (self.crate, self.version) if part)
        place = ""
        if self.file:
            place = self.file.rsplit("/", 1)[-1] + (f":{self.line}" if self.line else "")
        text = ", ".join(part for part in (head, place) if part)
        if self.function:
            text += f" in `{self.function}`"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "crate": self.crate,
            "version": self.version,
            "release": self.release,
            "file": self.file,
            "line": self.line,
            "function": self.function,
            "url": self.url,
            "fires_when": self.fires_when,
            "in_pasted_release": self.in_pasted_release,
            "gone_since": self.gone_since,
            "note": self.note or None,
            "upgrade": self.upgrade,
        }


_BARE_NAME = re.compile(r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*")


def _says_something(condition: str | None) -> str | None:
    """A firing condition worth a line: not a bare name (`dtype`, `_`: a `match` arm's binding, as older
    harvests wrote it), which says nothing of when the panic fires."""
    if condition is None or _BARE_NAME.fullmatch(condition.strip()):
        return None
    return condition


def _source_text(record: Record, site: AnswerSite) -> str:
    """The card's `file:line`: the site's line, as "where" and the link name it (a runtime panic's record
    names no file: its card has none)."""
    if not record.filePath or not site.file:
        return ""
    return f"{site.file}:{site.line}" if site.line else site.file


def _literal_text(record: Record) -> str:
    """A message's literal words, placeholders dropped: `{:?}` and `{id:?}` read the same."""
    return " ".join(split_format_string(record.errorMessage)).lower()


def _full_pattern_match(match: Match) -> bool:
    return any(r.signal == "pattern" and r.detail.startswith("full") for r in match.reasons)


def is_runtime(record: Record) -> bool:
    """A Rust runtime panic's record (std's own message, or an error type unwrapped): it names no file."""
    return bool((record.model_extra or {}).get("runtime")) or record.backgroundTag == RUNTIME_TAG


def _shown(matches: tuple[Match, ...]) -> tuple[Match, ...]:
    """The matches worth a row: answers, and nearby records of at least MIN_SHOWN_CONFIDENCE."""
    return tuple(m for m in matches if m.known or m.confidence >= MIN_SHOWN_CONFIDENCE)


def _paste_hints(panic: Panic | None, declared: tuple[VersionHint, ...]) -> list[VersionHint | CheckoutHint]:
    """Versions the paste reveals, most telling first: the panic's own path, its frames, then declarations."""
    hints: list[VersionHint | CheckoutHint] = []
    if panic is not None:
        locations = [panic.location] + [frame.location for frame in panic.frames]
        for location in locations:
            if location is not None:
                hint = hint_from_path(location.raw_path)
                if hint is not None:
                    hints.append(hint)
    hints.extend(declared)
    return hints


def _function_name(site: Site) -> str | None:
    if not site.function:
        return None
    return f"{site.impl_type}::{site.function}" if site.impl_type else site.function


def _frame_function(panic: Panic) -> str | None:
    """The function a backtrace names at the panic's own location (its hash suffix dropped)."""
    if panic.location is None:
        return None
    for frame in panic.frames:
        if frame.location is not None and frame.location.path == panic.location.path:
            symbol = re.sub(r"::h[0-9a-f]{16}$", "", frame.symbol)
            return (
                symbol.rsplit("::", 2)[-2] + "::" + symbol.rsplit("::", 1)[-1] if "::" in symbol else symbol
            )
    return None


def pasted_site(
    releases: ReleaseTable, panic: Panic, declared: tuple[VersionHint, ...] = ()
) -> AnswerSite | None:
    """Where a paste says a panic was raised, named from the harvested sources: the repository and release
    its path and versions reveal, the enclosing function at that release, a link to the line there. A path
    outside every harvested file (the user's own code) is still given, with what the paste says."""
    location = panic.location
    if location is None:
        return None
    hint = hint_from_path(location.raw_path)
    crate = hint.crate if isinstance(hint, VersionHint) else None
    version = hint.version if isinstance(hint, VersionHint) else None
    hints = _paste_hints(panic, declared)
    for repo, path in releases.function_files(location.path, crate):
        candidates = releases.candidates(repo, crate, hints)
        pasted = bool(candidates)
        if not candidates:
            candidates = list(reversed(releases.releases.get(repo, [])))  # newest first
        line = location.line or 0
        function = releases.function_at(repo, path, candidates, line) if line else None
        release = (
            next(
                (r for r in candidates if releases.function_at(repo, path, [r], line) is not None),
                candidates[0],
            )
            if candidates
            else None
        )
        if release is None:
            continue
        crate_name = crate or crate_of(path, repo)
        crate_version = release.crate_version(crate_name) or version
        ref = release.ref if release.is_tag else release.sha
        note = ""
        named = None if pasted else _named_version(hints, crate_name)
        if named:
            function = None  # another release's lines would name another function: only the frame's name
        if not pasted:
            note = (
                f"{crate_name} {named} is not in the catalog: the lines shown are those of {release.name}."
                if named
                else f"The paste names no release: the lines are those of {release.name}."
            )
        # The file as that release's tree has it (Burn's crates sat at the top level before v0.13).
        tree_path = release.repository_path(path)
        return AnswerSite(
            repo=repo,
            crate=crate_name,
            version=crate_version,
            release=release.name,
            file=tree_path,
            line=location.line,
            function=function.qualified if function else _frame_function(panic),
            url=github_url(repo, ref, tree_path, location.line) if location.line else None,
            in_pasted_release=True if pasted and function is not None else None,
            note=note,
        )
    return AnswerSite(
        repo=None,
        crate=crate,
        version=version,
        release=None,
        file=location.path,
        line=location.line,
        function=_frame_function(panic),
        url=None,
    )


def answer_site(
    releases: ReleaseTable,
    record: Record,
    panic: Panic | None,
    declared: tuple[VersionHint, ...] = (),
    record_of: Callable[[str], Record | None] | None = None,
    same_message: Callable[[str], Sequence[str]] | None = None,
) -> AnswerSite:
    """The site of `record` in the release the paste reveals; else, when the paste shows the record's file
    and a line, the release whose site is nearest that line (a checkout between two releases); else the
    newest release that has it. With `record_of` (the catalog's records by id), a message that later
    releases print the same under another record (placeholders renamed) is not said to be gone, and one
    reworded in the same function is said to be reworded, not removed."""
    sites = releases.sites_of(record.id)
    repo = record.repo
    file = record.filePath
    newest = releases.newest_site(record.id)
    crate = (newest.crate if newest else None) or (crate_of(file, repo or "") if file else None)
    if newest is None or repo is None:
        own = anchored(record.githubUrl or "", record.lineNumber) or None
        return AnswerSite(repo, crate, None, None, file, record.lineNumber, None, own)
    hints = _paste_hints(panic, declared)
    line = panic.location.line if panic is not None and panic.location is not None else None
    candidates = releases.candidates(repo, crate, hints)
    pasted: Release | None = candidates[0] if candidates else None
    gone = releases.gone_since(record.id)
    last = record.id
    reworded_as: Record | None = None
    if gone is not None and record_of is not None:

        def literal_of(record_id: str) -> str | None:
            found = record_of(record_id)
            return _literal_text(found) if found is not None else None

        last = last_successor(releases, record.id, literal_of)
        gone = releases.gone_since(last)  # the same words printed by a later record are not gone
        after = successor(releases, last, literal_of) if gone is not None else None
        if after is not None and not after.same_text:
            reworded_as = record_of(after.record_id)
    gone_version = gone.crate_version(crate) or gone.name if gone else None
    chosen = newest
    in_pasted: bool | None = None
    guessed = False
    note = ""
    if pasted is not None:
        at = releases.site_in(record.id, candidates, line)
        in_pasted = at is not None
        if at is not None:
            chosen = at
        else:
            first = sites[0].version or sites[0].release.name
            last = newest.version or newest.release.name
            pasted_version = pasted.crate_version(crate) or pasted.name
            span = first if first == last else f"{first} to {last}"
            note = f"Not raised here in {crate} {pasted_version}: this message is in {span}."
    else:
        named = _named_version(hints, crate)
        if named is not None:
            note = (
                f"{crate} {named} is not in the catalog: the lines shown are those of {newest.release.name}."
            )
        elif line is not None and panic is not None and _same_file_path(panic, file):
            # The release whose line is the pasted one, or nearest it: its line and link, even when it is
            # the newest (an analysed record's own line may be another commit's).
            chosen = releases.nearest_release_site(record.id, line) or newest
            guessed = True
            if chosen.release != newest.release:
                version_name = chosen.version or chosen.release.name
                note = f"The paste names no release; its line is that of {crate} {version_name}."
    # The same words still raised from another file (a check moved to another module or crate): upgrading
    # does not take the message away, and the card says where it comes from instead. A reworded message
    # says so instead, so its group is not read.
    elsewhere: list[tuple[str, Site]] = []
    if gone is not None and reworded_as is None and same_message is not None:
        elsewhere = raised_after(releases, gone, same_message(last))
    upgrade = None
    removal = releases.removal(last) if gone is not None and reworded_as is None else None
    # Only when the paste's release has the site (or names none): an upgrade past the commit that took the
    # message out is then the first thing to try.
    gone_by = removal is not None and gone is not None and removal.gone_ref == gone.ref
    if (
        gone_by
        and removal is not None
        and gone is not None
        and gone.is_tag
        and in_pasted is not False
        and not elsewhere
    ):
        upgrade = (
            f"Upgrade to {crate} {gone_version} or later: it no longer raises this message here, "
            f"since the commit {removal.said}."
        )
    if reworded_as is not None and not note:
        words = " ".join(reworded_as.errorMessage.split())[:160]
        note = f'Reworded in {crate} {gone_version}: from then on the same check reads "{words}".'
    elif gone is not None and not note and elsewhere:
        note = _raised_elsewhere_note(gone, crate, gone_version, elsewhere)
    elif gone is not None and not note:
        note = f"No longer raised since {crate} {gone_version}."
        if gone_by and removal is not None:
            note = f"No longer raised since {crate} {gone_version} (commit {removal.said})."
    version = chosen.version or None
    release_ref = chosen.release.ref if chosen.release.is_tag else chosen.release.sha
    # One line per site, in "where", the source text and the link: that of the release named (the pasted
    # one, the one its line shows, else the newest). The record's own link (an analysed record links the
    # code its analysis read) only where its line is that release's line.
    site_line = chosen.line
    own_line = not (in_pasted or guessed) and record.lineNumber in (None, chosen.line)
    url = anchored(record.githubUrl or "", chosen.line) if own_line else None
    # The file as the chosen release's tree has it (Burn's crates sat at the top level before v0.13).
    tree_path = chosen.release.repository_path(file) if file else file
    if not url and tree_path:
        url = github_url(repo, release_ref, tree_path, chosen.line)
    return AnswerSite(
        repo=repo,
        crate=crate,
        version=version,
        release=chosen.release.name,
        file=tree_path,
        line=site_line,
        function=_function_name(chosen),
        url=url,
        fires_when=_says_something(chosen.condition),
        panics_doc=chosen.panics_doc,
        in_pasted_release=in_pasted,
        gone_since=gone_version,
        note=note,
        upgrade=upgrade,
        condition_note=condition_note(releases, record.id, chosen.release, crate),
    )


def raised_after(releases: ReleaseTable, gone: Release, others: Iterable[str]) -> list[tuple[str, Site]]:
    """Of the records `others` (the same words as a record that `gone` no longer raises), each file still
    raising them in `gone` or a later release (of another repository: one released since `gone`, as Burn's
    ONNX import moved to burn-onnx and its wgpu runtime to cubecl), with its newest site, by path."""
    found: dict[str, Site] = {}
    for other in others:
        newest = releases.newest_site(other)
        path = releases.paths.get(other)
        if newest is None or not path:
            continue
        later = (
            newest.release.order >= gone.order
            if newest.release.repo == gone.repo
            else newest.release.date >= gone.date
        )
        if not later:
            continue
        known = found.get(path)
        if known is None or newest.release.date > known.release.date:
            found[path] = newest
    return sorted(found.items())


def _raised_elsewhere_note(
    gone: Release, crate: str | None, gone_version: str | None, elsewhere: Sequence[tuple[str, Site]]
) -> str:
    """The card's release line for a message that left this file but is still raised from another one."""
    path, site = elsewhere[0]
    owner = ", ".join(
        part for part in (site.crate, site.release.repo if site.release.repo != gone.repo else None) if part
    )
    where = f"`{site.release.repository_path(path)}`" + (f" ({owner})" if owner else "")
    more = f"{len(elsewhere)} other files, such as {where}," if len(elsewhere) > 1 else where
    return (
        f"Not raised from this file since {crate} {gone_version}; the same message still comes from {more} "
        "in later releases, so an upgrade may not take it away."
    )


def condition_note(releases: ReleaseTable, record_id: str, shown: Release, crate: str | None) -> str:
    """One line on the record's firing condition across releases, for the card that shows release `shown`:
    the first change after it (what an upgrade changes), else the last one up to it; with the commit that
    made it when the ecosystem build found it. Empty when the condition never changed."""
    history = record_history(releases, record_id)
    changes = [c for c in history.changes if c.release.repo == shown.repo] if history is not None else []
    if not changes:
        return ""
    later = [c for c in changes if c.release.order > shown.order]
    change = later[0] if later else changes[-1]
    name = change.crate or crate
    version = change.release.crate_version(name) or change.release.name
    where = f"{name} {version}" if name else version
    commit = f" (commit {change.commit.said})" if change.commit is not None else ""
    before = " / ".join(f"`{text}`" for text in change.before)
    after = " / ".join(f"`{text}`" for text in change.after)
    return f"In {where}{commit}: {before} before, {after} from then on."


def _named_version(hints: list[VersionHint | CheckoutHint], crate: str | None) -> str | None:
    """The version a paste names for `crate` (its own path, a lock entry), when it names one."""
    if crate is None:
        return None
    wanted = crate.replace("_", "-")
    for hint in hints:
        if isinstance(hint, VersionHint) and hint.exact and hint.crate.replace("_", "-") == wanted:
            return hint.version
    return None


def _same_file_path(panic: Panic, file: str | None) -> bool:
    if panic.location is None or not file:
        return False
    own = path_parts(file)
    return common_suffix_length(path_parts(panic.location.path), own) >= min(len(own), 3)


def panic_json(panic: Panic) -> dict[str, Any]:
    location = panic.location
    return {
        "message": panic.message,
        "path": location.path if location else None,
        "raw_path": location.raw_path if location else None,
        "line": location.line if location else None,
        "column": location.column if location else None,
        "thread": panic.thread,
        "thread_id": panic.thread_id,
        "kind": panic.kind,
        "frames": len(panic.frames),
        "follow_on": panic.follow_on,
    }


def match_json(match: Match) -> dict[str, Any]:
    record = match.record
    return {
        "record_id": record.id,
        "score": match.score,
        "confidence": match.confidence,
        "known": match.known,
        "panic": match.panic_index,
        "message": record.errorMessage,
        "file": record.filePath,
        "line": record.lineNumber,
        "reasons": [
            {
                "signal": reason.signal,
                "detail": reason.detail,
                "span": list(reason.span) if reason.span else None,
                "matched_text": reason.matched_text,
            }
            for reason in match.reasons
        ],
    }


def result_json(
    result: LookupResult,
    site: AnswerSite | None = None,
    card: Card | None = None,
    history: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The `--json` shape: what was extracted, the ranked matches, whether to post unasked, where the
    answered panic is raised (`site`, null when there is no answer) and the answer's card as data (`card`:
    what the chat cards show, null when there is no answer)."""
    site_json = site.to_json() if site is not None else None
    return {
        "status": result.status,
        "answer_panic": result.answer_panic,
        "root_panic": result.root_panic,
        "consequences": list(result.consequences),
        "truncated": result.truncated,
        "auto_reply": result.auto_reply,
        "panics": [panic_json(panic) for panic in result.panics],
        "matches": [match_json(match) for match in result.matches],
        "site": site_json,
        "card": card_json(card, site_json, history) if card is not None else None,
    }
