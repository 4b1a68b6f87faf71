"""The embedded default catalog, prebuilt once per user and reused: `panicbot lookup` and `card` with no
catalog named read a `.pbcat` of it from the user's cache folder instead of parsing and indexing the JSONL
on every start.

Where: `$PANICBOT_CACHE_DIR` when set (empty, `off`, `0`, `no`, `false` or `none`: no cache at all), else
`$XDG_CACHE_HOME/panicbot`, else `~/.cache/panicbot`. What: one file
`embedded-<key>-<records digest>.pbcat`, where the key changes with the embedded data files' contents,
panicbot's code (`bot.prebuilt.code_fingerprint()` and every source file of `bot/`) and the interpreter and
library versions; the records digest is the sha256 of the file's records section (`read_prebuilt` checks the
index's own sha256, but reads a record only when a lookup shows it: a damaged record would otherwise be
found too late, or not at all). A file owned by another user is not read.

Written on the first start that finds no usable file: through a temporary file in the same folder renamed
over the name (two first starts at once leave one whole file), then the files of other keys and forgotten
temporary files are removed. Anything that goes wrong (no home, a read-only or full disk, a stale, foreign
or damaged file) is a debug log line and the JSONL path: the user gets the same answer, a little later. A
file that cannot be used is removed, so the next start writes a good one.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO

import orjson
import pydantic

import bot
from bot.lookup import PanicLookup
from bot.records import default_catalog

CACHE_DIR_ENV = "PANICBOT_CACHE_DIR"
OFF_VALUES = frozenset({"", "off", "0", "no", "false", "none"})
CACHE_LAYOUT = 1  # this module's own scheme: changing it changes every key
PREFIX = "embedded-"
SUFFIX = ".pbcat"
NAME = re.compile(r"^embedded-(?P<key>[0-9a-f]{32})-(?P<records>[0-9a-f]{16})\.pbcat$")
TEMPORARY = re.compile(r"^\.embedded-.*\.tmp$")
FORGOTTEN_TEMPORARY_SECONDS = 3600.0  # older than any write: left by a process that was killed
_CHUNK = 1 << 20
_MAX_HEADER_BYTES = 64 * 1024

log = logging.getLogger(__name__)


class CacheFileError(Exception):
    """A cache file that is not the one its name promises (damaged, or not ours)."""


def cache_dir(environ: Mapping[str, str]) -> Path | None:
    """The folder of the cache, or None when it is turned off or there is no home to put it in."""
    if CACHE_DIR_ENV in environ:
        value = environ[CACHE_DIR_ENV].strip()
        if value.lower() in OFF_VALUES:
            return None
        return Path(value).expanduser()
    xdg = environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):  # the XDG spec: a relative path is invalid and ignored
        return Path(xdg) / "panicbot"
    home = environ.get("HOME", "")
    if not home or not os.path.isabs(home):
        return None
    return Path(home) / ".cache" / "panicbot"


def _package_files(root: Path) -> Iterable[Path]:
    """bot/'s Python sources and its embedded data files, in a stable order."""
    sources = (path for path in root.rglob("*.py") if "__pycache__" not in path.parts)
    data = (path for path in (root / "data").iterdir() if path.is_file())
    return sorted([*sources, *data])


def cache_key() -> str:
    """What the embedded catalog's prebuilt file depends on: the data files' contents, the code that reads,
    indexes and writes them, and the interpreter and the libraries that shape the bytes."""
    from bot.prebuilt import code_fingerprint  # noqa: PLC0415

    location = bot.__file__
    if location is None:
        raise OSError("the bot package has no folder")
    root = Path(location).parent
    digest = hashlib.sha256()
    facts = (CACHE_LAYOUT, sys.version, pydantic.VERSION, orjson.__version__, code_fingerprint())
    digest.update(repr(facts).encode())
    for path in _package_files(root):
        content = path.read_bytes()
        digest.update(f"{path.relative_to(root).as_posix()}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()[:32]


def records_digest(handle: IO[bytes]) -> str:
    """The sha256 of a prebuilt file's records section (read from its header; see bot/prebuilt.py)."""
    from bot.prebuilt import MAGIC  # noqa: PLC0415

    if handle.read(len(MAGIC)) != MAGIC:
        raise CacheFileError("not a prebuilt catalog")
    line = handle.readline(_MAX_HEADER_BYTES)
    if not line.endswith(b"\n"):
        raise CacheFileError("truncated header")
    header = json.loads(line)
    start, length = header["records_blob"]
    if not isinstance(start, int) or not isinstance(length, int) or start < 0 or length < 0:
        raise CacheFileError("records section")
    handle.seek(len(MAGIC) + len(line) + start)
    digest = hashlib.sha256()
    left = length
    while left > 0:
        chunk = handle.read(min(_CHUNK, left))
        if not chunk:
            raise CacheFileError("truncated records section")
        digest.update(chunk)
        left -= len(chunk)
    return digest.hexdigest()


def cache_name(key: str, data: bytes) -> str:
    """The file name of the prebuilt bytes `data` under `key`."""
    return f"{PREFIX}{key}-{records_digest(io.BytesIO(data))[:16]}{SUFFIX}"


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def read_cached(folder: Path, key: str) -> PanicLookup | None:
    """The lookup of the cache file of `key` in `folder`, or None. A file of this key that cannot be used
    is removed."""
    from bot.prebuilt import read_prebuilt  # noqa: PLC0415

    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        log.debug("panicbot cache: cannot list %s (%s)", folder, exc)
        return None
    for name in names:
        match = NAME.match(name)
        if match is None or match["key"] != key:
            continue
        path = folder / name
        try:
            with path.open("rb") as handle:
                if hasattr(os, "getuid") and os.fstat(handle.fileno()).st_uid != os.getuid():
                    # A cache folder others can write to (a shared PANICBOT_CACHE_DIR): only our own files.
                    raise CacheFileError("owned by another user")
                if not records_digest(handle).startswith(match["records"]):
                    raise CacheFileError("records section is not the one its name holds")
            return read_prebuilt(path)
        except Exception as exc:  # anything at all: the JSONL path answers the same
            log.debug("panicbot cache: %s refused (%s: %s); removed", path, exc.__class__.__name__, exc)
            _remove(path)
    return None


def write_cache(folder: Path, key: str, lookup: PanicLookup) -> Path | None:
    """The prebuilt file of `lookup` written under `key` (atomically), the other keys' files removed. None
    when it could not be written (the reason logged at debug level)."""
    temporary: Path | None = None
    try:
        from bot.prebuilt import prebuilt_bytes  # noqa: PLC0415

        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        # The temporary file first: an unwritable folder costs no build of the bytes.
        with tempfile.NamedTemporaryFile(
            "wb", dir=folder, prefix=f".{PREFIX}", suffix=".tmp", delete=False
        ) as out:
            temporary = Path(out.name)
            data = prebuilt_bytes(lookup)
            name = cache_name(key, data)
            out.write(data)
        # No fsync: a file damaged by a crash is refused when read (its size, the index's and the records'
        # digests) and written again.
        target = folder / name
        os.replace(temporary, target)
        temporary = None
        remove_others(folder, keep=name)
        return target
    except Exception as exc:  # a cache that cannot be written is no cache, never an error
        log.debug("panicbot cache: cannot write in %s (%s: %s)", folder, exc.__class__.__name__, exc)
        return None
    finally:
        if temporary is not None:
            _remove(temporary)


def remove_others(folder: Path, keep: str) -> None:
    """Remove the cache files other than `keep` and temporary files left by killed writers."""
    now = time.time()
    for entry in os.scandir(folder):
        if NAME.match(entry.name) and entry.name != keep:
            _remove(Path(entry.path))
        elif TEMPORARY.match(entry.name):
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime > FORGOTTEN_TEMPORARY_SECONDS:
                    _remove(Path(entry.path))


def open_default_lookup(environ: Mapping[str, str]) -> PanicLookup:
    """The lookup of the embedded catalog: from the cache when it holds a usable file, else from the JSONL
    (and the cache then written)."""
    folder = cache_dir(environ)
    if folder is None:
        return PanicLookup(default_catalog())
    try:
        key = cache_key()
    except Exception as exc:  # no key, no cache
        log.debug("panicbot cache: no key (%s: %s)", exc.__class__.__name__, exc)
        return PanicLookup(default_catalog())
    cached = read_cached(folder, key)
    if cached is not None:
        return cached
    lookup = PanicLookup(default_catalog())
    write_cache(folder, key, lookup)
    return lookup
