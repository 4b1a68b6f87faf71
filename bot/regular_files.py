"""Catalog files are regular files: a FIFO would block the reader until a writer comes, a device such as
`/dev/zero` would be read until memory runs out, a socket cannot be opened. These are refused before a
byte is read, with the kind of thing the path names."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path


class NotARegularFile(OSError):
    """A path that names something other than a regular file (its `strerror` says what)."""

    def __init__(self, path: Path | str, mode: int) -> None:
        super().__init__(errno.EINVAL, f"not a regular file ({file_kind(mode)})", str(path))


def file_kind(mode: int) -> str:
    """What an `st_mode` is, in words."""
    kinds = (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISREG, "a regular file"),
    )
    return next((name for test, name in kinds if test(mode)), "not a file")


def not_regular_reason(path: Path | str) -> str | None:
    """Why `path` is not a catalog file one may read ("not a regular file (a FIFO)"), from its status alone
    (following symbolic links; nothing is opened); None for a regular file, a folder or a missing path
    (those are said elsewhere)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return f"not a regular file ({file_kind(mode)})"


def open_regular(path: Path | str) -> int:
    """A descriptor of the regular file `path`, opened for reading without blocking on a FIFO (and
    checked once open, so a path replaced between a check and the open is still caught); NotARegularFile
    for anything else, OSError when it cannot be opened."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotARegularFile(path, mode)
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFile(path, mode)
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def read_regular(path: Path | str) -> bytes:
    """The bytes of the regular file `path` (see `open_regular`)."""
    with os.fdopen(open_regular(path), "rb") as handle:
        return handle.read()


def first_irregular_path(paths: Iterable[Path | str]) -> str | None:
    """ "PATH: not a regular file (a FIFO)" for the first of `paths` that names neither a regular file nor a
    folder (a catalog path a reader must refuse before opening it), else None."""
    for path in paths:
        reason = not_regular_reason(path)
        if reason is not None:
            return f"{path}: {reason}; a catalog is a file or a folder of them"
    return None
