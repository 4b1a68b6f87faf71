"""A damaged or crafted `.pbcat` is refused (PrebuiltError, one line naming the file), at load where the
damage can be seen there, else by the lookup that meets it: never a MemoryError, an OverflowError, an
IndexError or a hang. A path that is not a regular file is refused before it is read."""

from __future__ import annotations

import functools
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.prebuilt import PrebuiltError, read_prebuilt
from bot.records import load_catalog
from tests.support.damaged_pbcat import (
    FOUND_AT_LOOKUP,
    KIND_NAMES,
    Parts,
    answers,
    crafted_index,
    damaged_kinds,
    fuzz_prebuilt,
    small_prebuilt_bytes,
)

# The fuzz run's size: a few thousand mutations in well under 30 s on an idle core; PANICBOT_FUZZ_RUNS
# asks for more (bench/pbcat_fuzz.py runs it at scale and prints the figures).
FUZZ_RUNS = int(os.environ.get("PANICBOT_FUZZ_RUNS", "2000"))


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, list[str]]:
    return small_prebuilt_bytes(tmp_path_factory.mktemp("small"))


@pytest.fixture(scope="module")
def kinds(small: tuple[bytes, list[str]]) -> dict[str, bytes]:
    return damaged_kinds(small[0])


def test_the_small_catalog_answers_with_its_releases(small: tuple[bytes, list[str]], tmp_path: Path) -> None:
    """What the fuzz run compares with: its pastes are answered, with the pasted release's site."""
    good, pastes = small
    path = tmp_path / "good.pbcat"
    path.write_bytes(good)
    lookup = read_prebuilt(path)
    results = [lookup.answer_json(lookup.lookup(paste)) for paste in pastes]
    assert sum(result["status"] == "matched" for result in results) >= len(pastes) - 2
    assert any(result["site"] and result["site"]["release"] == "v0.19.0" for result in results)


@pytest.mark.parametrize("name", KIND_NAMES)
def test_each_damaged_kind_is_refused_with_one_line(
    name: str, kinds: dict[str, bytes], small: tuple[bytes, list[str]], tmp_path: Path
) -> None:
    path = tmp_path / "damaged.pbcat"
    path.write_bytes(kinds[name])
    if name in FOUND_AT_LOOKUP:
        lookup = read_prebuilt(path)  # nothing the load reads shows it
        with pytest.raises(PrebuiltError) as refused:
            answers(lookup, small[1])
    else:
        with pytest.raises(PrebuiltError) as refused:
            read_prebuilt(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and message.endswith("rebuild it with `panicbot catalog build`")
    assert "\n" not in message


def test_every_named_kind_is_tested(kinds: dict[str, bytes]) -> None:
    tested = test_each_damaged_kind_is_refused_with_one_line.pytestmark[0].args[1]  # type: ignore[attr-defined]
    assert sorted(tested) == sorted(kinds)


def test_a_crafted_index_that_fits_its_checks_still_answers(
    small: tuple[bytes, list[str]], tmp_path: Path
) -> None:
    """The checks refuse what does not fit, not a file that was merely pickled again."""
    good, pastes = small
    path = tmp_path / "again.pbcat"
    path.write_bytes(good)
    want = answers(read_prebuilt(path), pastes)
    path.write_bytes(crafted_index(good, lambda index: None))
    assert Parts.of(path.read_bytes()).index != Parts.of(good).index  # pickled again, not the same bytes
    assert answers(read_prebuilt(path), pastes) == want


def test_fuzzed_files_are_refused_or_answered_right(tmp_path: Path) -> None:
    """Thousands of mutations of a real `.pbcat` (lengths, offsets, pickle opcodes, tables, truncation,
    random bytes; crafted ones with their sha256 made to fit): each is a refusal or a clean answer."""
    result = fuzz_prebuilt(tmp_path, FUZZ_RUNS, seed=int(os.environ.get("PANICBOT_FUZZ_SEED", "0")))
    print(result.summary())  # shown with -s
    assert result.failures == [], result.failures[:10]
    assert result.runs == FUZZ_RUNS
    # Each way through was taken: refusals at load and at a lookup, and files still answering right.
    assert result.refused_at_load > FUZZ_RUNS // 2
    assert result.refused_at_lookup > 0 and result.right_answers > 0


# ---- paths that are not regular files -------------------------------------------------------------------


def finishes(call: Callable[[], object], seconds: float = 10.0) -> BaseException | object:
    """What `call` returned or raised, or a failed test if it had not finished after `seconds`."""
    outcome: list[BaseException | object] = []

    def target() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:  # returned to the test, which checks it
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still blocked after {seconds} s"
    return outcome[0]


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "catalog.pbcat"
    os.mkfifo(fifo)
    refused = finishes(lambda: read_prebuilt(fifo))
    assert isinstance(refused, PrebuiltError)
    assert str(refused) == f"{fifo}: not a regular file (a FIFO); a prebuilt catalog is a file"
    jsonl = tmp_path / "catalog.jsonl"
    os.mkfifo(jsonl)
    catalog = finishes(lambda: load_catalog([jsonl]))
    assert [str(problem) for problem in catalog.errors] == [  # type: ignore[attr-defined]
        f"{jsonl}:0: cannot read: not a regular file (a FIFO)"
    ]


def test_a_device_is_refused_without_reading_it(tmp_path: Path) -> None:
    """`/dev/zero` named as a catalog (here through a link named like one) would be read until memory runs
    out."""
    for name in ("zero.pbcat", "zero.jsonl"):
        link = tmp_path / name
        link.symlink_to("/dev/zero")
        if name.endswith(".pbcat"):
            refused = finishes(functools.partial(read_prebuilt, link))
            assert isinstance(refused, PrebuiltError)
            assert "not a regular file (a character device)" in str(refused)
        else:
            catalog = finishes(functools.partial(load_catalog, [link]))
            problems = [str(problem) for problem in catalog.errors]  # type: ignore[attr-defined]
            assert problems == [f"{link}:0: cannot read: not a regular file (a character device)"]


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.pbcat"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(PrebuiltError, match=r"not a regular file \(a socket\)"):
            read_prebuilt(path)


def test_a_side_table_that_is_a_fifo_is_not_read(tmp_path: Path, small: tuple[bytes, list[str]]) -> None:
    source = tmp_path / "x.jsonl"
    source.write_text(
        '{"record": {"id": "a1", "errorMessage": "a message long enough to count", "repo": "o/r"}}\n',
        encoding="utf-8",
    )
    os.mkfifo(tmp_path / "x.sites.jsonl")
    os.mkfifo(tmp_path / "x.families.toml")
    catalog = finishes(lambda: load_catalog([source]))
    assert len(catalog.entries) == 1  # type: ignore[attr-defined]
