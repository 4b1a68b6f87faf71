"""The chart of the most frequent unmatched groups over time, drawn as SVG on the server with pygal.

pygal: pure Python, no browser-side library (the page works offline), SVG that scales. The store keeps a count
with the first and last sighting of each group, not per-day counts, so each line runs from 1 at the first
sighting to the count at the last: how fast a group grows, and whether it is still seen."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Sequence

import pygal
from pygal.style import DefaultStyle

from adapters.storage.console_queries import UnmatchedGroup

TOP_GROUPS = 6
LEGEND_CHARS = 90
_SCRIPT = re.compile(r"<script\b.*?</script>", re.DOTALL | re.IGNORECASE)
_STYLE = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL)


def unmatched_chart(groups: Sequence[UnmatchedGroup]) -> str:
    """SVG text without script (pygal's tooltip configuration is dropped: no inline code is allowed)."""
    chart = pygal.DateTimeLine(
        js=[],
        width=960,
        height=420,
        style=DefaultStyle(legend_font_size=12, title_font_size=14, label_font_size=11),
        legend_at_bottom=True,
        legend_at_bottom_columns=1,
        truncate_legend=LEGEND_CHARS,
        x_label_rotation=20,
        x_value_formatter=lambda moment: moment.strftime("%Y-%m-%d"),
        dots_size=4,
        no_data_text="No unmatched panics stored",
    )
    chart.title = "Top unmatched groups: count from first to last sighting"
    for rank, group in enumerate(groups[:TOP_GROUPS], 1):
        first_line = group.message.splitlines()[0] if group.message else ""
        points = [(group.first_seen, 1), (group.last_seen, group.count)]
        if group.first_seen == group.last_seen:
            points = [(group.last_seen, group.count)]
        chart.add(f"#{rank} {first_line}", points)
    return _SCRIPT.sub("", chart.render(is_unicode=True))


def style_hashes(svg: str) -> list[str]:
    """CSP hashes of the SVG's own style elements: it may style itself, nothing else may."""
    return [
        "'sha256-" + base64.b64encode(hashlib.sha256(css.encode()).digest()).decode() + "'"
        for css in _STYLE.findall(svg)
    ]
