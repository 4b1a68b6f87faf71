"""Large pastes are read in a worker process: the answers are the ones an in-process lookup gives, a worker
that dies costs no paste, and a large paste never reaches the core's whole-text `lookup` from the flows."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from adapters.chat.flows import ChatFlows, ChatState
from adapters.chat.paste_readers import LARGE_PASTE_CHARS, PasteReaders
from bot import LookupResult, PanicLookup, PasteReading, read_paste, result_json
from bot.records import default_catalog
from tests.support.release_pastes import release_cases

LOG_LINE = "[00:01:02] Epoch 3/10 - Iteration 1234 - Loss 0.4521 - Accuracy 0.8812\n"
LOCK = '[[package]]\nname = "burn-tensor"\nversion = "0.16.0"\n'


def large(paste: str) -> str:
    """A paste as it arrives from a training run: a long log, a Cargo.lock excerpt, then the panic."""
    return LOG_LINE * (LARGE_PASTE_CHARS // len(LOG_LINE) + 10) + LOCK + paste


@pytest.fixture
def readers() -> Iterator[PasteReaders]:
    pool = PasteReaders()
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def core() -> PanicLookup:
    return PanicLookup(default_catalog())


def test_a_reading_made_in_a_worker_process_is_the_one_made_here(readers: PasteReaders) -> None:
    texts = [large(case.text) for case in release_cases(default_catalog(), seed=3, count=12)]

    async def scenario() -> list[PasteReading]:
        return [await readers.read(text) for text in texts]

    readings = asyncio.run(scenario())
    assert readings == [read_paste(text) for text in texts]
    assert all(reading.version_hints for reading in readings)  # the Cargo.lock excerpt was read too


def test_large_pastes_get_the_answers_of_an_in_process_lookup(core: PanicLookup) -> None:
    state: ChatState[str] = ChatState()
    flows = ChatFlows("test", core, state, reply_key=lambda reply: reply.reply_id)
    texts = [large(case.text) for case in release_cases(default_catalog(), seed=4, count=12)]

    async def scenario() -> list[LookupResult]:
        return [await flows.lookup_off_loop(text) for text in texts]

    through_readers = asyncio.run(scenario())
    here = [core.lookup(text) for text in texts]
    assert [result_json(r) for r in through_readers] == [result_json(r) for r in here]
    assert sum(1 for result in here if result.best is not None) >= 10


class ReadingOnly:
    """A core that refuses a whole large text: the flows must hand it a reading made elsewhere."""

    def __init__(self, real: PanicLookup) -> None:
        self.real = real
        self.readings = 0

    def lookup(self, text: str, limit: int = 5) -> LookupResult:
        assert len(text) < LARGE_PASTE_CHARS, "a large paste was read in a lookup thread"
        return self.real.lookup(text, limit)

    def lookup_reading(self, reading: PasteReading, limit: int = 5) -> LookupResult:
        self.readings += 1
        return self.real.lookup_reading(reading, limit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def test_the_flows_read_large_pastes_elsewhere_and_short_ones_in_the_thread(core: PanicLookup) -> None:
    reading_only = ReadingOnly(core)
    state: ChatState[str] = ChatState()
    flows = ChatFlows("test", reading_only, state, reply_key=lambda reply: reply.reply_id)  # type: ignore[arg-type]
    case = release_cases(default_catalog(), seed=5, count=1)[0]

    async def scenario() -> tuple[LookupResult, LookupResult]:
        return await flows.lookup_off_loop(large(case.text)), await flows.lookup_off_loop(case.text)

    big, small = asyncio.run(scenario())
    assert reading_only.readings == 1
    assert big.best is not None and small.best is not None
    assert big.best.record.id == small.best.record.id


def test_a_worker_that_dies_costs_no_paste(readers: PasteReaders) -> None:
    text = large(
        "thread 'main' panicked at src/main.rs:3:5:\nindex out of bounds: the len is 3 but the index is 7"
    )

    async def scenario() -> tuple[PasteReading, PasteReading]:
        await asyncio.wrap_future(readers.warm())
        pool = readers._executor()
        for pid in list(pool._processes):  # the OOM killer, say
            os.kill(pid, signal.SIGKILL)
        first = await readers.read(text)  # read here, this once
        return first, await readers.read(text)  # and in a new worker after

    first, second = asyncio.run(scenario())
    assert first == second == read_paste(text)
    assert readers.rebuilt == 1
