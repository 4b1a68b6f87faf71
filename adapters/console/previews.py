"""A record's card three ways, side by side: Slack's Block Kit and Discord's embed as HTML close to what each
client shows, and GitHub markdown (`bot.card.render_markdown`), with the limits check of `panicbot card`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from adapters.cli.card_preview import FORMATS
from adapters.console.markup import discord_markdown, github_markdown, slack_mrkdwn
from bot.card import Card, render_markdown

_COLOUR_CLASSES = {
    0x992D22: "critical",
    0xE74C3C: "error",
    0xE67E22: "warning",
    0x3498DB: "info",
}


@dataclass(frozen=True)
class Preview:
    name: str
    html: Markup
    source: str
    """What the platform receives: the JSON payload, or the markdown text."""
    problems: tuple[str, ...]


def _text(obj: dict[str, Any] | None) -> Markup:
    if not obj:
        return Markup("")
    if obj.get("type") == "mrkdwn":
        return slack_mrkdwn(str(obj.get("text", "")))
    return escape(str(obj.get("text", "")))


def slack_html(blocks: list[dict[str, Any]]) -> Markup:
    out: list[Markup] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "header":
            out.append(Markup('<div class="sk-header">{}</div>').format(_text(block.get("text"))))
        elif kind == "section":
            parts = [_text(block.get("text"))]
            fields = block.get("fields") or []
            if fields:
                cells = Markup("").join(
                    Markup('<div class="sk-field">{}</div>').format(_text(f)) for f in fields
                )
                parts.append(Markup('<div class="sk-fields">{}</div>').format(cells))
            accessory = block.get("accessory")
            if accessory and accessory.get("type") == "button":
                parts.append(_button(accessory))
            out.append(Markup('<div class="sk-section">{}</div>').format(Markup("").join(parts)))
        elif kind == "context":
            items = Markup(" ").join(_text(e) for e in block.get("elements", []) if e.get("type") != "image")
            out.append(Markup('<div class="sk-context">{}</div>').format(items))
        elif kind == "divider":
            out.append(Markup('<hr class="sk-divider">'))
        elif kind == "actions":
            buttons = Markup("").join(
                _button(e) for e in block.get("elements", []) if e.get("type") == "button"
            )
            out.append(Markup('<div class="sk-actions">{}</div>').format(buttons))
        else:
            out.append(Markup('<div class="sk-unknown">[{} block]</div>').format(kind))
    return Markup('<div class="slack-message">{}</div>').format(Markup("").join(out))


def _button(element: dict[str, Any]) -> Markup:
    style = element.get("style") or "default"
    label = (element.get("text") or {}).get("text", "")
    return Markup('<span class="sk-button sk-{}">{}</span>').format(style, label)


def discord_html(payload: dict[str, Any]) -> Markup:
    out: list[Markup] = []
    for embed in payload.get("embeds", []):
        colour = _COLOUR_CLASSES.get(int(embed.get("color") or 0), "default")
        parts: list[Markup] = []
        title = escape(embed.get("title", ""))
        url = str(embed.get("url") or "")
        if title and url.startswith(("https://", "http://")):
            title = Markup('<a href="{}" rel="noopener noreferrer nofollow">{}</a>').format(url, title)
        if title:
            parts.append(Markup('<div class="dc-title">{}</div>').format(title))
        if embed.get("description"):
            parts.append(
                Markup('<div class="dc-description">{}</div>').format(discord_markdown(embed["description"]))
            )
        fields = Markup("").join(
            Markup('<div class="dc-field{}"><div class="dc-field-name">{}</div>{}</div>').format(
                " dc-inline" if item.get("inline") else "",
                item.get("name", ""),
                discord_markdown(item.get("value", "")),
            )
            for item in embed.get("fields", [])
        )
        if fields:
            parts.append(Markup('<div class="dc-fields">{}</div>').format(fields))
        footer = (embed.get("footer") or {}).get("text")
        if footer:
            parts.append(Markup('<div class="dc-footer">{}</div>').format(footer))
        out.append(Markup('<div class="dc-embed dc-{}">{}</div>').format(colour, Markup("").join(parts)))
    buttons = Markup("").join(
        Markup('<span class="dc-button dc-{}">{} {}</span>').format(
            spec.get("style", "secondary"), spec.get("emoji") or "", spec.get("label") or ""
        )
        for spec in payload.get("components", [])
    )
    if buttons:
        out.append(Markup('<div class="dc-buttons">{}</div>').format(buttons))
    return Markup('<div class="discord-message">{}</div>').format(Markup("").join(out))


def previews(card: Card) -> list[Preview]:
    build, check = FORMATS["slack"]
    slack = build(card)
    shown = [
        Preview(
            "Slack",
            slack_html(slack["blocks"]),
            json.dumps(slack, ensure_ascii=False, indent=2),
            tuple(check(slack)),
        )
    ]
    build, check = FORMATS["discord"]
    discord = build(card)
    shown.append(
        Preview(
            "Discord",
            discord_html(discord),
            json.dumps(discord, ensure_ascii=False, indent=2),
            tuple(check(discord)),
        )
    )
    markdown = render_markdown(card)
    shown.append(Preview("GitHub", github_markdown(markdown), markdown, ()))
    return shown
