"""Progress bars on stderr for the long dataset commands (harvest, merge, lint, the ecosystem build): they
draw on a terminal and leave nothing behind; piped or captured, they print nothing."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def stderr_progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
