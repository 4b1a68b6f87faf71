"""Terminal rendering of a lookup with rich: the answer card, then the alternatives."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from bot.card import Card, confidence_percent, reported_label
from bot.lookup import PanicLookup
from bot.matcher import LookupResult


def terminal_context_line(card: Card) -> str:
    """The context line with the link spelled out: terminals do not render markdown links."""
    source = f"Source: {card.source_label}" + (f" ({card.source_url})" if card.source_url else "")
    parts = [source] if card.source_label else []
    if card.tags:
        parts.append("Tags: " + ", ".join(card.tags))
    if card.dataset_version:
        parts.append(f"Data set {card.dataset_version}")
    parts.append(f"Confidence {confidence_percent(card.confidence)}")
    return " · ".join(parts)


def card_renderable(card: Card) -> RenderableType:
    """The card's sections as rich text. Not via Markdown: it would take `Tensor<B>` for inline HTML."""
    parts: list[RenderableType] = [Text(card.title, style="bold")]

    def section(label: str, body: str) -> None:
        parts.append(Text.assemble("\n", (label, "bold cyan"), " ", body))

    if len(card.details) == 1:
        section("Details:", card.details[0])
    elif card.details:
        parts.append(Text("\nDetails:", style="bold cyan"))
        parts.extend(Text(f" - {text}") for text in card.details)
    if card.where:
        section("Where:", card.where)
    if card.release_note:
        section("Release:", card.release_note)
    if card.fires_when:
        section("Fires when:", card.fires_when)
    if card.condition_note:
        section("Condition changed:", card.condition_note)
    if card.panics_doc:
        section("Its docs say it panics:", card.panics_doc)
    if card.cause:
        section("What it means:" if card.has_analysis else "Note:", card.cause)
    if card.when:
        section("When it happens:", card.when)
    if card.solutions:
        parts.append(Text("\nSolutions:", style="bold cyan"))
        parts.extend(Text(f" {n}. {s}") for n, s in enumerate(card.solutions, 1))
    if card.example_fix:
        parts.append(Text("\nExample fix:", style="bold cyan"))
        parts.append(Syntax(card.example_fix, card.example_fix_language, word_wrap=True))
    if card.prevention_tips:
        parts.append(Text("\nPrevention:", style="bold cyan"))
        parts.extend(Text(f" - {tip}") for tip in card.prevention_tips)
    if card.analysis_note:
        parts.append(Text("\n" + card.analysis_note, style="italic"))
    if card.reported_in:
        reports = ", ".join(f"{reported_label(url)} ({url})" for url in card.reported_in)
        section("Reported in:", reports)
    if card.consequences:
        parts.append(Text("\nAlso in this paste, following from this panic:", style="bold cyan"))
        parts.extend(Text(f" - {text}") for text in card.consequences)
    parts.append(Text("\n" + terminal_context_line(card), style="dim"))
    return Group(*parts)


def print_result(service: PanicLookup, result: LookupResult, console: Console) -> None:
    if not result.panics:
        console.print("Nothing to look up.")
        return
    card = service.card(result)
    if card is None:
        panic = result.panics[0]
        where = f" at {panic.location}" if panic.location else ""
        console.print(f"[bold yellow]No known record[/] for this panic{where}.", markup=True)
        # What the JSON's site says of the release (not in the catalog, no release named): the card's
        # "Release" line when there is a card.
        site = service.site(result)
        if site is not None and site.note:
            console.print(site.note, markup=False, highlight=False)
    else:
        title = "Best match" + (" (would auto-reply)" if result.auto_reply else "")
        console.print(Panel(card_renderable(card), title=title, title_align="left"))
    others = [m for m in result.matches if card is None or m.record.id != card.record_id]
    # Best first: the lookup's order puts the answer's contenders first, not the table's readers.
    others.sort(key=lambda match: match.confidence, reverse=True)
    if others:
        table = Table(title="Nearby records" if card is None else "Alternatives", title_justify="left")
        table.add_column("confidence", justify="right")
        table.add_column("message")
        table.add_column("source")
        for match in others:
            source = f"{match.record.filePath}:{match.record.lineNumber}" if match.record.filePath else ""
            table.add_row(f"{match.confidence:.0%}", match.record.errorMessage, source)
        console.print(table)
    if len(result.panics) > 1:
        console.print(
            f"{len(result.panics)} panics in the paste; the answer is for panic "
            f"#{(result.answer_panic or 0) + 1}:"
        )
        for number, panic in enumerate(result.panics, start=1):
            first_line = panic.message.splitlines()[0] if panic.message else ""
            console.print(
                f"  {number}. {first_line[:120]}" + (f"  ({panic.location})" if panic.location else ""),
                markup=False,
                highlight=False,
            )
