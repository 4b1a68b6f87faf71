"""`panicbot lookup --jsonl [--jobs N]`: one result line per input line `{"id", "text"}`, in input order.

With `--jobs N` (N > 1), N worker processes answer chunks of lines; the catalog is loaded once, before they
are forked, so they share it instead of loading it N times (where fork is unavailable, each loads it). At most
a few chunks per worker are read ahead, so a stream of any length is answered in constant memory, and each
line is written as soon as every line before it is.
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import islice
from typing import Any, TextIO

import orjson

from bot import PanicLookup

CHUNK_LINES = 64  # lines a worker answers at a time: a round trip costs about one lookup
CHUNKS_AHEAD = 4  # per worker, read ahead of the line being written

_worker_lookup: PanicLookup | None = None  # the catalog of a worker process


class BatchWorkerError(RuntimeError):
    """A worker process died (killed by the system, out of memory): the lines written so far stand."""


def answer_line(service: PanicLookup, number: int, line: str, limit: int) -> str | None:
    """The result line of input line `number` (None for a blank line); a bad line gets an `error` result."""
    if not line.strip():
        return None
    item_id: Any = None
    try:
        item = json.loads(line)  # as Python reads JSON (NaN, big integers, lone surrogates): not orjson
        if not isinstance(item, dict):
            raise ValueError("expected a JSON object")
        item_id = item.get("id")
        text = item.get("text")
        if not isinstance(text, str):
            raise ValueError("missing string field 'text'")
    except ValueError as exc:
        return json_line({"id": item_id, "line": number, "error": f"line {number}: {exc}"})
    result = service.lookup(text, limit=limit)
    return json_line({"id": item_id, **service.answer_json(result)})


def json_line(value: Any) -> str:
    """One line of JSON (compact, UTF-8 as is), written by orjson: the JSON cost more than the match. What
    orjson refuses (a lone surrogate from a `\\ud800` in the input, an integer beyond 64 bits) is written
    by `json` as before."""
    try:
        return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE).decode()
    except (orjson.JSONEncodeError, UnicodeDecodeError):
        return json.dumps(value, ensure_ascii=False) + "\n"


def lookup_jsonl(
    service: PanicLookup,
    stream: Iterable[str],
    out: TextIO,
    limit: int,
    jobs: int = 1,
    opener: Callable[[], PanicLookup] | None = None,
) -> None:
    """Answer every line of `stream` to `out`, in order. `opener` loads the catalog in a worker that could
    not be forked from this process."""
    numbered = enumerate(stream, start=1)
    if jobs <= 1:
        for number, line in numbered:
            reply = answer_line(service, number, line, limit)
            if reply is not None:
                out.write(reply)
                out.flush()
        return
    answered = 0
    try:
        for last, replies in _answered_in_workers(service, numbered, limit, jobs, opener):
            out.write("".join(replies))
            out.flush()
            answered = last
    except BrokenProcessPool:
        raise BatchWorkerError(
            f"a batch worker process died (killed by the system?): input lines 1-{answered} were answered, "
            f"the rest were not (run again from line {answered + 1})"
        ) from None


def _answered_in_workers(
    service: PanicLookup,
    numbered: Iterator[tuple[int, str]],
    limit: int,
    jobs: int,
    opener: Callable[[], PanicLookup] | None,
) -> Iterator[tuple[int, list[str]]]:
    """(the last input line of a chunk, its result lines), chunk by chunk in input order."""
    global _worker_lookup  # noqa: PLW0603  (what a forked worker inherits)
    forking = "fork" in multiprocessing.get_all_start_methods()
    _worker_lookup = service if forking else None
    context = multiprocessing.get_context("fork" if forking else "spawn")
    gc.freeze()  # the catalog is not walked by the workers' collections: their pages stay shared
    pending: deque[Future[tuple[int, list[str]]]] = deque()
    try:
        with ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=context,
            initializer=_start_worker,
            initargs=(None if forking else opener,),
        ) as pool:
            while True:
                while len(pending) < jobs * CHUNKS_AHEAD:
                    chunk = list(islice(numbered, CHUNK_LINES))
                    if not chunk:
                        break
                    pending.append(pool.submit(_answer_chunk, chunk, limit))
                if not pending:
                    return
                yield pending.popleft().result()
    finally:
        _worker_lookup = None
        gc.unfreeze()


def _start_worker(opener: Callable[[], PanicLookup] | None) -> None:
    global _worker_lookup  # noqa: PLW0603
    if _worker_lookup is None and opener is not None:
        _worker_lookup = opener()


def _answer_chunk(chunk: Sequence[tuple[int, str]], limit: int) -> tuple[int, list[str]]:
    service = _worker_lookup
    if service is None:
        raise RuntimeError("a batch worker without a catalog")
    replies = (answer_line(service, number, line, limit) for number, line in chunk)
    return chunk[-1][0], [reply for reply in replies if reply is not None]


def default_jobs() -> int:
    """The processor count this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on every platform
        return max(1, os.cpu_count() or 1)
