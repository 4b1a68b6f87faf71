"""A record's history across the harvested releases, as facts for the card's data (`card.history`): the
first release that raises it, the releases where its firing condition changed, and the first release that no
longer raises it with the commit that took it out (the ecosystem build's removal table)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.releases import Release, ReleaseTable, Removal, Site


@dataclass(frozen=True)
class ConditionChange:
    """The release from which a record's firing condition reads differently than in the release before."""

    release: Release
    crate: str | None
    before: tuple[str, ...]
    after: tuple[str, ...]


@dataclass(frozen=True)
class History:
    first: Site
    newest: Site
    changes: tuple[ConditionChange, ...]
    gone_since: Release | None
    removal: Removal | None
    releases: int
    """How many harvested releases raise it."""


def _said(release: Release, crate: str | None) -> dict[str, Any]:
    return {"release": release.ref, "crate": crate, "version": release.crate_version(crate)}


def record_history(releases: ReleaseTable, record_id: str) -> History | None:
    """The record's history, or None when no harvested release has its site (a hand-written record)."""
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
            changes.append(ConditionChange(group[0].release, group[0].crate, previous, conditions))
        previous = conditions
    gone = releases.gone_since(record_id)
    return History(
        first=sites[0],
        newest=releases.newest_site(record_id) or sites[-1],
        changes=tuple(changes),
        gone_since=gone,
        removal=releases.removal(record_id) if gone is not None else None,
        releases=len(by_release),
    )


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
            {**_said(change.release, change.crate), "before": [*change.before], "after": [*change.after]}
            for change in history.changes
        ],
        "gone_since": None if gone is None else _said(gone, history.newest.crate),
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
