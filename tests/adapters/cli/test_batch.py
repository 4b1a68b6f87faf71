"""`lookup --jsonl --jobs N`: the lines of one process, in input order, from worker processes that share
the catalog; a bounded read-ahead; a worker that dies is an error that keeps the lines already written."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
from collections.abc import Iterator

import pytest

from adapters.cli import batch
from adapters.cli.batch import BatchWorkerError, lookup_jsonl
from bot.lookup import PanicLookup
from bot.records import default_catalog
from tests.adapters.cli.test_main import run
from tests.support.pastes import all_cases, shared_data_dir


@pytest.fixture(scope="module")
def service() -> PanicLookup:
    return PanicLookup(default_catalog())


def open_default() -> PanicLookup:
    """The catalog of a worker that was spawned, not forked."""
    return PanicLookup(default_catalog())


def batch_lines() -> list[str]:
    texts = [case.text for case in all_cases(shared_data_dir(), seed=3, per_format=20)][:260]
    lines = [json.dumps({"id": number, "text": text}) for number, text in enumerate(texts)]
    lines[7] = "this is not json"
    lines[80] = ""  # blank: no result line
    lines[151] = json.dumps({"id": "no-text"})
    lines[200] = json.dumps([1, 2])
    return lines


def answered(service: PanicLookup, lines: list[str], jobs: int) -> str:
    out = io.StringIO()
    lookup_jsonl(service, (line + "\n" for line in lines), out, limit=5, jobs=jobs)
    return out.getvalue()


def test_workers_write_the_lines_one_process_writes_in_the_same_order(service: PanicLookup) -> None:
    lines = batch_lines()
    alone = answered(service, lines, jobs=1)
    assert answered(service, lines, jobs=2) == alone
    replies = [json.loads(line) for line in alone.splitlines()]
    assert len(replies) == len(lines) - 1
    assert [reply.get("id") for reply in replies[:7]] == list(range(7))
    assert replies[7]["error"].startswith("line 8: ") and replies[7]["id"] is None
    assert sum(1 for reply in replies if reply.get("status") == "matched") > 150


class CountingOut(io.StringIO):
    def __init__(self, consumed: list[int]) -> None:
        super().__init__()
        self.consumed = consumed
        self.read_when_first_written: int | None = None

    def write(self, text: str) -> int:
        if self.read_when_first_written is None:
            self.read_when_first_written = self.consumed[0]
        return super().write(text)


def test_a_long_stream_is_read_a_few_chunks_ahead_of_what_is_written(service: PanicLookup) -> None:
    consumed = [0]
    paste = json.dumps({"id": 1, "text": "avg pool 2d backward"}) + "\n"

    def stream() -> Iterator[str]:
        for _ in range(20_000):
            consumed[0] += 1
            yield paste

    out = CountingOut(consumed)
    lookup_jsonl(service, stream(), out, limit=5, jobs=2)
    assert out.read_when_first_written is not None
    assert out.read_when_first_written <= (2 * batch.CHUNKS_AHEAD + 1) * batch.CHUNK_LINES
    assert out.getvalue().count("\n") == 20_000


def test_a_worker_that_dies_is_an_error_and_the_lines_before_it_stand(
    service: PanicLookup, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = batch.answer_line

    def dies_on_a_word(service: PanicLookup, number: int, line: str, limit: int) -> str | None:
        if "kill-this-worker" in line:
            os._exit(9)  # as the kernel's OOM killer would end it
        return answer(service, number, line, limit)

    monkeypatch.setattr(batch, "answer_line", dies_on_a_word)
    lines = [json.dumps({"id": n, "text": "avg pool 2d backward"}) for n in range(batch.CHUNK_LINES * 3)]
    lines.append(json.dumps({"id": "last", "text": "kill-this-worker"}))
    out = io.StringIO()
    with pytest.raises(BatchWorkerError, match="died") as raised:
        lookup_jsonl(service, (line + "\n" for line in lines), out, limit=5, jobs=2)
    # The lines written are the first ones, whole and in order, and the error says where to start again
    # (chunks answered by the other worker but not collected when the pool broke are not written).
    written = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [reply["id"] for reply in written] == list(range(len(written)))
    assert f"input lines 1-{len(written)} were answered" in str(raised.value)
    assert f"run again from line {len(written) + 1}" in str(raised.value)


def test_without_fork_each_worker_loads_the_catalog_itself(
    service: PanicLookup, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    lines = batch_lines()[:70]
    out = io.StringIO()
    lookup_jsonl(service, (line + "\n" for line in lines), out, limit=5, jobs=2, opener=open_default)
    assert out.getvalue() == answered(service, lines, jobs=1)


def test_the_command_with_jobs_writes_what_it_writes_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    data = ("\n".join(batch_lines()[:150]) + "\n").encode()
    alone = run(monkeypatch, ["lookup", "--jsonl"], data)
    assert alone[0] == 0 and alone[1].count("\n") == 149
    assert run(monkeypatch, ["lookup", "--jsonl", "--jobs", "2"], data) == alone
    assert run(monkeypatch, ["lookup", "--jsonl", "--jobs", "0"], data) == alone  # one per processor


@pytest.mark.parametrize(
    "argv", [["lookup", "--jobs", "2", "avg", "pool"], ["lookup", "--jsonl", "--jobs", "-1"]]
)
def test_jobs_outside_a_batch_or_below_zero_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out = run(monkeypatch, argv, b'{"id": 1, "text": "avg pool"}\n')
    assert code == 2 and out == ""
    assert "--jobs" in capsys.readouterr().err
