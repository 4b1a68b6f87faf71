"""Slack-only state: the replies the bot posted, to follow edits and deletions of the paste they answer."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PostedReply:
    channel: str
    ts: str
    record_id: str
    paste_digest: str = ""  # what the reply answered: an edit that keeps the text (an unfurl) changes nothing
