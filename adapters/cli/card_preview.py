"""`panicbot card RECORD_ID`: a card exactly as each platform would receive it, and whether it fits."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, TextIO

from slack_sdk.models.blocks import Block

from adapters.discord import render as discord_render
from adapters.slack import render as slack_render
from bot.card import Card, card_json, render_markdown
from bot.lookup import PanicLookup

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


def _discord_payload(card: Card) -> dict[str, Any]:
    message = discord_render.card_message(card, ephemeral=True)
    components = [
        {key: value for key, value in asdict(spec).items() if value is not None}
        for spec in message.components
    ]
    return {
        "embeds": [embed.to_dict() for embed in message.embeds],
        "components": components,
        "allowed_mentions": {"parse": []},
        "flags": 64,
    }


def _discord_problems(payload: dict[str, Any]) -> list[str]:
    problems = []
    total = 0
    for embed in payload["embeds"]:
        title, description = embed.get("title", ""), embed.get("description", "")
        fields = embed.get("fields", [])
        footer = (embed.get("footer") or {}).get("text", "")
        if len(title) > discord_render.TITLE_MAX:
            problems.append(f"title of {len(title)} characters (256 allowed)")
        if len(description) > discord_render.DESCRIPTION_MAX:
            problems.append(f"description of {len(description)} characters (4,096 allowed)")
        if len(fields) > 25:
            problems.append(f"{len(fields)} fields (25 allowed)")
        for item in fields:
            if len(item["value"]) > discord_render.FIELD_VALUE_MAX or len(item["name"]) > 256:
                problems.append(f"field {item['name'][:40]!r} over its limit")
        total += sum(len(part.strip()) for part in (title, description, footer))
        total += sum(len(item["name"].strip()) + len(item["value"].strip()) for item in fields)
    if total > discord_render.EMBEDS_TOTAL_MAX:
        problems.append(f"{total} characters in the embeds (6,000 allowed)")
    rows: dict[int, int] = {}
    for component in payload["components"]:
        rows[component.get("row", 0)] = rows.get(component.get("row", 0), 0) + 1
        custom_id = component.get("custom_id")
        if custom_id is not None and not 1 <= len(custom_id) <= 100:
            problems.append(f"custom_id of {len(custom_id)} characters (1-100 allowed)")
    problems.extend(
        f"{count} components in row {row} (5 allowed)" for row, count in rows.items() if count > 5
    )
    return problems


FORMATS: dict[str, tuple[Callable[[Card], dict[str, Any]], Callable[[dict[str, Any]], list[str]]]] = {
    "slack": (_slack_payload, _slack_problems),
    "discord": (_discord_payload, _discord_problems),
}


def run_card_preview(service: PanicLookup, record_id: str, fmt: str, out: TextIO, err: TextIO) -> int:
    card = service.card_for_record(record_id, PREVIEW_CONFIDENCE)
    if card is None:
        err.write(f"panicbot: no record with id {record_id} in the catalog\n")
        return 2
    if fmt == "text":
        out.write(render_markdown(card))
        return 0
    if fmt == "json":  # the card as data, as `lookup --json` gives it for its answer
        data = card_json(card, history=service.history_json(record_id))
        out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
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
