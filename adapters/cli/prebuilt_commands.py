"""`panicbot catalog build SRC... -o OUT.pbcat`, and opening a prebuilt catalog for `lookup` and `card`.

`bot.prebuilt` (pickle, mmap, hashing) and the file writer are imported only when a prebuilt file is built
or named."""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from bot.lookup import PanicLookup

PREBUILT_SUFFIX = ".pbcat"
MAX_PROBLEMS_SHOWN = 20


class PrebuiltUsageError(ValueError):
    """A prebuilt catalog that cannot serve (refused file, mixed with other paths): one line for the user."""


def is_prebuilt_path(path: str | Path) -> bool:
    return str(path).lower().endswith(PREBUILT_SUFFIX)


def open_prebuilt(paths: Sequence[str]) -> PanicLookup:
    """The lookup of the one prebuilt file among `paths`; refused when it comes with other paths, or when
    the file is stale, foreign or corrupt."""
    from bot.prebuilt import PrebuiltError, read_prebuilt  # noqa: PLC0415

    prebuilt = [path for path in paths if is_prebuilt_path(path)]
    if len(paths) != 1:
        raise PrebuiltUsageError(
            f"a prebuilt catalog ({prebuilt[0]}) cannot be combined with other catalog paths; "
            "build one file from all the sources with `panicbot catalog build SRC... -o OUT.pbcat`"
        )
    try:
        with cpython_noise_dropped():
            return read_prebuilt(paths[0])
    except PrebuiltError as exc:
        raise PrebuiltUsageError(str(exc)) from None


# What CPython 3.11 prints itself (PyErr_Print in bytearray's destructor, to sys.stderr), now and then, when
# a crafted index's BYTEARRAY8 length is more than malloc gives: the load fails with MemoryError all the
# same and the file is refused with its own line, so this one is dropped (nothing else printed is).
CPYTHON_BYTEARRAY_LINE = "SystemError: deallocated bytearray object has exported buffers"
_STDERR_SWAP = threading.Lock()


@contextmanager
def cpython_noise_dropped() -> Iterator[None]:
    """sys.stderr held while a prebuilt file is read, and written back without CPYTHON_BYTEARRAY_LINE: a
    refused file is one line. (Logging handlers keep the stream they were given, so service logs are not
    held; one reader at a time swaps sys.stderr.)"""
    with _STDERR_SWAP:
        real = sys.stderr
        held = io.StringIO()
        sys.stderr = held
        try:
            yield
        finally:
            sys.stderr = real
            kept = [
                line
                for line in held.getvalue().splitlines(keepends=True)
                if line.strip() != CPYTHON_BYTEARRAY_LINE
            ]
            if kept:
                real.write("".join(kept))


def refuse_prebuilt(paths: Sequence[str], command: str) -> None:
    """Commands that need every record (report, stats, lint...) read the JSONL sources, not a prebuilt
    file."""
    for path in paths:
        if is_prebuilt_path(path):
            raise PrebuiltUsageError(
                f"{path} is a prebuilt catalog: `panicbot {command}` reads the JSONL sources it was "
                "built from"
            )


def run_prebuilt_build(sources: Sequence[str], output: Path, out: TextIO, err: TextIO) -> int:
    """Load the sources (validated, as any catalog), refuse to write when a line is bad, else write the
    prebuilt file atomically. 0 written; 1 the sources have errors; 2 a usage error."""
    from adapters.files import write_bytes_atomically  # noqa: PLC0415
    from bot.lookup import PanicLookup  # noqa: PLC0415
    from bot.prebuilt import prebuilt_bytes  # noqa: PLC0415
    from bot.records import load_catalog  # noqa: PLC0415

    if not is_prebuilt_path(output):
        raise PrebuiltUsageError(f"-o {output}: a prebuilt catalog's name ends with {PREBUILT_SUFFIX}")
    refuse_prebuilt(sources, "catalog build")
    catalog = load_catalog(sources)
    for problem in catalog.errors[:MAX_PROBLEMS_SHOWN]:
        err.write(f"error: {problem}\n")
    if len(catalog.errors) > MAX_PROBLEMS_SHOWN:
        err.write(f"error: ... and {len(catalog.errors) - MAX_PROBLEMS_SHOWN} more\n")
    if catalog.errors:
        err.write(f"panicbot: {len(catalog.errors)} bad lines in the sources: {output} not written\n")
        return 1
    if not catalog.entries:
        err.write(f"panicbot: no record in {', '.join(sources)}: {output} not written\n")
        return 1
    data = prebuilt_bytes(PanicLookup(catalog))
    write_bytes_atomically(output, data)
    duplicates = f", {len(catalog.duplicates)} duplicate ids replaced" if catalog.duplicates else ""
    out.write(f"wrote {output}: {len(catalog.entries)} records{duplicates}, {len(data) / 2**20:.1f} MB\n")
    return 0
