"""Writing files so that a reader (or a crash) sees the old file or the whole new one, never half of it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def write_bytes_atomically(path: Path, data: bytes, mode: int = 0o644) -> None:
    """`data` to `path` through a temporary file in the same folder, flushed to disk, then renamed."""
    temporary: str | None = None
    try:
        with tempfile.NamedTemporaryFile(
            "wb", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
        ) as handle:
            temporary = handle.name
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # NamedTemporaryFile makes a private (0600) file; a catalog is meant to be read by others.
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise


def write_atomically(path: Path, lines: Iterable[str]) -> None:
    """Text lines (each ended by a newline) to `path`, atomically (see `write_bytes_atomically`)."""
    write_bytes_atomically(path, "".join(f"{line}\n" for line in lines).encode("utf-8"))
