"""A record's history across the harvested releases, as facts for the card's data (`card.history`): the
first release that raises it, the releases where its firing condition changed with the commit that changed
it, and the first release that no longer raises it with the commit that took it out (the ecosystem build's
history table)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz

from bot.releases import ConditionCommit, Release, ReleaseTable, Removal, Site

# A message whose next wording in the same function is this close (typo fixes: "overriden" -> "overridden")
# or extends it ("... dimension" -> "... dimension! Got {:?}") was reworded, not removed.
REWORDED_SIMILARITY = 95.0
# Successors followed at most: a message renamed at every release is still one message.
MAX_SUCCESSORS = 50


@dataclass(frozen=True)
class Successor:
    """The record that carries a message on in the release where its own record stops: the same printed
    text with its placeholders renamed (`{:?}` -> `{self:?}`), or a light rewording in the same function."""

    record_id: str
    same_text: bool


def successor(
    releases: ReleaseTable, record_id: str, literal_of: Callable[[str], str | None]
) -> Successor | None:
    """The record of the same file, first raised in the release that no longer has `record_id`, whose
    message prints the same words (`literal_of`: a message's words, placeholders dropped), else is a light
    rewording of it raised by the same function. None when the message really went away, or when two
    rewordings compete (precision first: "No longer raised" then stands, as the data says)."""
    gone = releases.gone_since(record_id)
    newest = releases.newest_site(record_id)
    path = releases.paths.get(record_id)
    mine = literal_of(record_id)
    if gone is None or newest is None or not path or not mine:
        return None
    same: list[str] = []
    reworded: list[str] = []
    for other in releases.records_at(path):
        sites = releases.sites_of(other) if other != record_id else ()
        if not sites or (sites[0].release.repo, sites[0].release.ref) != (gone.repo, gone.ref):
            continue
        theirs = literal_of(other)
        if not theirs:
            continue
        if theirs == mine:
            same.append(other)
        elif (
            newest.function
            and sites[0].function == newest.function
            and (theirs.startswith(mine) or fuzz.ratio(mine, theirs) >= REWORDED_SIMILARITY)
        ):
            reworded.append(other)
    if same:
        return Successor(sorted(same)[0], True)
    return Successor(reworded[0], False) if len(reworded) == 1 else None


def last_successor(releases: ReleaseTable, record_id: str, literal_of: Callable[[str], str | None]) -> str:
    """The newest record that prints the same text as `record_id` (itself when none follows it)."""
    current, seen = record_id, {record_id}
    for _ in range(MAX_SUCCESSORS):
        found = successor(releases, current, literal_of)
        if found is None or not found.same_text or found.record_id in seen:
            break
        current = found.record_id
        seen.add(current)
    return current


@dataclass(frozen=True)
class ConditionChange:
    """The release from which a record's firing condition reads differently than in the release before."""

    release: Release
    crate: str | None
    before: tuple[str, ...]
    after: tuple[str, ...]
    commit: ConditionCommit | None = None
    """The commit from which it reads so, when the ecosystem build found it in the git history."""


@dataclass(frozen=True)
class History:
    first: Site
    newest: Site
    changes: tuple[ConditionChange, ...]
    gone_since: Release | None
    removal: Removal | None
    releases: int
    """How many harvested releases raise it."""
    continued_by: Successor | None = None
    """The record that prints the same words after it (placeholders renamed), or its light rewording."""


def _said(release: Release, crate: str | None) -> dict[str, Any]:
    return {"release": release.ref, "crate": crate, "version": release.crate_version(crate)}


def record_history(
    releases: ReleaseTable, record_id: str, literal_of: Callable[[str], str | None] | None = None
) -> History | None:
    """The record's history, or None when no harvested release has its site (a hand-written record). With
    `literal_of` (a message's words by record id), the message is followed into the records that carry it
    on (`successor`): it is gone only when the last of them is, and `continued_by` names the next one."""
    sites = releases.sites_of(record_id)
    if not sites:
        return None
    by_release: dict[tuple[str, str], list[Site]] = {}
    for site in sites:  # in release order
        by_release.setdefault((site.release.repo, site.release.ref), []).append(site)
    changes: list[ConditionChange] = []
    previous: tuple[str, ...] | None = None
    for group in by_release.values():
        # A release's conditions: one per site of the message in the file; unknown ones say nothing.
        conditions = tuple(sorted({site.condition for site in group if site.condition}))
        if not conditions:
            continue
        if previous is not None and conditions != previous:
            release = group[0].release
            commit = releases.condition_commit(record_id, release.ref)
            changes.append(ConditionChange(release, group[0].crate, previous, conditions, commit))
        previous = conditions
    gone = releases.gone_since(record_id)
    continued_by: Successor | None = None
    if gone is not None and literal_of is not None:
        continued_by = successor(releases, record_id, literal_of)
        last = last_successor(releases, record_id, literal_of)
        gone = releases.gone_since(last)
        if continued_by is not None and continued_by.same_text and gone is not None:
            rewording = successor(releases, last, literal_of)
            continued_by = rewording if rewording is not None and not rewording.same_text else continued_by
        record_id = last
    return History(
        first=sites[0],
        newest=releases.newest_site(record_id) or sites[-1],
        changes=tuple(changes),
        gone_since=gone,
        removal=releases.removal(record_id) if gone is not None else None,
        releases=len(by_release),
        continued_by=continued_by,
    )


def _commit_json(commit: ConditionCommit | None) -> dict[str, Any] | None:
    if commit is None:
        return None
    return {
        "commit": commit.commit,
        "subject": commit.subject,
        "pull_request": commit.pull_request,
        "since_release": commit.since_ref,
    }


def history_json(history: History | None) -> dict[str, Any] | None:
    """The history as the card's data: releases named by tag and crate version, facts only."""
    if history is None:
        return None
    removal, gone = history.removal, history.gone_since
    return {
        "first": _said(history.first.release, history.first.crate),
        "newest": _said(history.newest.release, history.newest.crate),
        "releases": history.releases,
        "condition_changes": [
            {
                **_said(change.release, change.crate),
                "before": [*change.before],
                "after": [*change.after],
                "changed_by": _commit_json(change.commit),
            }
            for change in history.changes
        ],
        "gone_since": None if gone is None else _said(gone, history.newest.crate),
        "continued_by": (
            None
            if history.continued_by is None
            else {"record_id": history.continued_by.record_id, "same_text": history.continued_by.same_text}
        ),
        "removed_by": (
            {
                "commit": removal.commit,
                "subject": removal.subject,
                "pull_request": removal.pull_request,
                "last_release": removal.last_ref,
            }
            if removal is not None
            else None
        ),
    }
