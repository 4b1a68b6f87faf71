"""`panicbot card RECORD_ID`: a card exactly as each platform would receive it, and whether it fits."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TextIO

from slack_sdk.models.blocks import Block

from adapters.slack import render as slack_render
from bot.card import Card, render_markdown
from bot.service import PanicLookup

PREVIEW_CONFIDENCE = 1.0


def _slack_problems(payload: dict[str, Any]) -> list[str]:
    blocks = payload["blocks"]
    problems = []
    if len(blocks) > slack_render.MAX_BLOCKS:
        problems.append(f"{len(blocks)} blocks (Slack allows 50)")
    size = slack_render.message_size(blocks)
    if size > slack_render.MESSAGE_BUDGET:
        problems.append(f"{size} characters of blocks (budget {slack_render.MESSAGE_BUDGET})")
    for block in blocks:
        try:
            parsed = Block.parse(block)
            if parsed is not None:
                parsed.validate_json()
        except Exception as exc:  # slack_sdk raises SlackObjectFormationError on a broken block
            problems.append(f"invalid block: {exc}")
    return problems


def _slack_payload(card: Card) -> dict[str, Any]:
    message = slack_render.card_message(card, ephemeral=True, record_id=card.record_id, lookup_key="preview")
    return {"text": message.text, "blocks": message.blocks}


FORMATS: dict[str, tuple[Callable[[Card], dict[str, Any]], Callable[[dict[str, Any]], list[str]]]] = {
    "slack": (_slack_payload, _slack_problems),
}


def run_card_preview(service: PanicLookup, record_id: str, fmt: str, out: TextIO, err: TextIO) -> int:
    card = service.card_for_record(record_id, PREVIEW_CONFIDENCE)
    if card is None:
        err.write(f"panicbot: no record with id {record_id} in the catalog\n")
        return 2
    if fmt == "text":
        out.write(render_markdown(card))
        return 0
    build, check = FORMATS[fmt]
    payload = build(card)
    out.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
    problems = check(payload)
    for problem in problems:
        err.write(f"does not fit {fmt}: {problem}\n")
    if not problems:
        err.write(f"fits {fmt}'s limits\n")
    return 1 if problems else 0
