"""Large pastes are read in a worker process. Reading a paste (`bot.read_paste`: finding its panics and the
versions it declares) is the part of a lookup whose cost grows with the paste; done in a lookup thread it
holds the GIL, and the event loop, which acknowledges requests and answers health checks, waits its turn.
A worker process reads it with a GIL of its own and hands back a small `PasteReading`; the lookup proper
then runs in a lookup thread against the catalog serving now."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from bot import PasteReading, read_paste

log = logging.getLogger("panicbot.readers")

# Shorter pastes are read in the lookup thread: below this, sending the text to a process costs about what
# reading it does (a 16 KB paste reads in well under a millisecond).
LARGE_PASTE_CHARS = 16 * 1024
# One process: the event loop keeps a core of its own on a 2-core machine.
READER_PROCESSES = 1


class PasteReaders:
    """A pool of reader processes, started on first use (or by `warm`), rebuilt if a worker dies; a paste
    whose worker died is read in the calling thread instead, so it is never lost."""

    def __init__(self, processes: int = READER_PROCESSES) -> None:
        self.processes = processes
        self.rebuilt = 0
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # spawn: a fresh interpreter, never a fork of a process with threads and an event loop.
                context = multiprocessing.get_context("spawn")
                self._pool = ProcessPoolExecutor(max_workers=self.processes, mp_context=context)
            return self._pool

    def _discard(self, pool: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
                self.rebuilt += 1
        pool.shutdown(wait=False, cancel_futures=True)

    def warm(self) -> Future[PasteReading]:
        """Start the worker now (a spawned interpreter imports the core: a fraction of a second), so the
        first large paste does not wait for it."""
        return self._executor().submit(read_paste, "")

    async def read(self, text: str) -> PasteReading:
        """`read_paste(text)` in a worker process; in a thread of the default executor if the pool broke."""
        pool = self._executor()
        try:
            return await asyncio.wrap_future(pool.submit(read_paste, text))
        except (BrokenProcessPool, RuntimeError) as exc:  # a worker died (OOM killer), or the pool shut down
            log.warning("a paste reader process failed (%s): reading in this process", exc.__class__.__name__)
            self._discard(pool)
            return await asyncio.to_thread(read_paste, text)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
