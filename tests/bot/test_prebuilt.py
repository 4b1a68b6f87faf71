"""A prebuilt catalog file answers as its source catalog does, reads only the records a lookup touches, and
refuses stale, corrupt and foreign files (a smuggled pickle included)."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import pickle
import zlib
from array import array
from pathlib import Path
from typing import Any

import pytest

from bot import prebuilt as prebuilt_module
from bot.lookup import PanicLookup
from bot.prebuilt import (
    MAGIC,
    LazyRecords,
    PrebuiltError,
    prebuilt_bytes,
    read_prebuilt,
    write_prebuilt,
)
from bot.records import Catalog, default_catalog, load_catalog
from tests.bot.test_rust_runtime import EXPECTED
from tests.support.damaged_pbcat import Parts
from tests.support.release_pastes import release_cases
from tests.support.runtime_pastes import runtime_cases

SEEDS_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "seeds.jsonl"
TYPED = ("avg pool 2d backward", "deform conv backward", "shpae mismatch", "not implemnted", "dtype")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return default_catalog()


@pytest.fixture(scope="module")
def source(catalog: Catalog) -> PanicLookup:
    return PanicLookup(catalog)


@pytest.fixture(scope="module")
def prebuilt_file(source: PanicLookup, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("prebuilt") / "embedded.pbcat"
    write_prebuilt(source, path)
    return path


@pytest.fixture(scope="module")
def prebuilt(prebuilt_file: Path) -> PanicLookup:
    return read_prebuilt(prebuilt_file)


def seed_pastes() -> list[str]:
    """A header paste per seed record, at its file and line, and one without a location."""
    pastes = []
    for line in SEEDS_FILE.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)["record"]
        where = f"{record.get('filePath') or 'src/lib.rs'}:{record.get('lineNumber') or 1}:9"
        pastes.append(f"thread 'main' panicked at {where}:\n{record['errorMessage']}\n")
        pastes.append(record["errorMessage"])
    return pastes


def assert_same_answers(source: PanicLookup, prebuilt: PanicLookup, texts: list[str]) -> None:
    for text in texts:
        want = source.lookup(text)
        got = prebuilt.lookup(text)
        assert prebuilt.answer_json(got) == source.answer_json(want), text[:200]
        assert prebuilt.card(got) == source.card(want), text[:200]
        for match in want.matches[:2]:
            assert prebuilt.card(got, got.matches[want.matches.index(match)]) == source.card(want, match)


def test_release_pastes_answer_the_same(catalog: Catalog, source: PanicLookup, prebuilt: PanicLookup) -> None:
    cases = release_cases(catalog, seed=0, count=200)
    assert_same_answers(source, prebuilt, [case.text for case in cases])


def test_runtime_pastes_answer_the_same(catalog: Catalog, source: PanicLookup, prebuilt: PanicLookup) -> None:
    cases = runtime_cases(catalog, EXPECTED, seed=0, count=120)
    assert_same_answers(source, prebuilt, [case.text for case in cases])


def test_seed_pastes_and_typed_queries_answer_the_same(source: PanicLookup, prebuilt: PanicLookup) -> None:
    assert_same_answers(source, prebuilt, [*seed_pastes(), *TYPED])


def test_records_ids_versions_and_cards_by_id_are_the_same(
    source: PanicLookup, prebuilt: PanicLookup
) -> None:
    assert len(prebuilt.matcher) == len(source.matcher)
    assert prebuilt.under_review == source.under_review
    assert prebuilt.catalog.covered == source.catalog.covered
    for position in range(0, len(source.matcher), 97):
        record = source.matcher.records[position]
        assert prebuilt.record(record.id) == record
        assert prebuilt.dataset_version(record.id) == source.dataset_version(record.id)
        assert prebuilt.card_for_record(record.id, 0.9) == source.card_for_record(record.id, 0.9)
    assert prebuilt.record("no-such-id") is None
    assert prebuilt.dataset_versions() == source.dataset_versions() != []


def test_a_prebuilt_matcher_makes_its_common_words_bitmaps_and_answers_the_same(
    source: PanicLookup, prebuilt: PanicLookup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bitmaps of common words are not in the file: a restored matcher makes them on use. With every word
    of 50 records or more common here (the embedded catalog has one word over the real bounds), typed
    queries asked twice go through them."""
    from bot import matcher as matcher_module

    monkeypatch.setattr(matcher_module, "COMMON_TOKEN_POSTINGS", 50)
    monkeypatch.setattr(matcher_module, "BITMAP_MIN_POSTING", 50)
    monkeypatch.setattr(matcher_module, "BITMAP_SHARE", 1_000_000)
    typed = ["input tensor must be", "tensor shape not supported", "the dtype should be", *TYPED]
    assert_same_answers(source, prebuilt, typed + typed)
    assert prebuilt.matcher._bitmaps


def test_a_lookup_validates_only_the_records_it_touches(prebuilt_file: Path) -> None:
    lookup = read_prebuilt(prebuilt_file)
    records = lookup.matcher.records
    assert isinstance(records, LazyRecords)
    assert records.validations == 0
    lookup.lookup(
        "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:915:9:\n"
        "Can't differentiate deform conv 2d backward.\n"
    )
    assert 0 < records.validations <= 40  # of thousands
    assert len(records) > 5_000


def test_autocomplete_reads_about_the_records_it_suggests(source: PanicLookup, prebuilt_file: Path) -> None:
    """What autocomplete reads of every record (message, tags, analysed) is a section of the file of its
    own: suggesting never validates the thousands of records (nor keeps them), about those suggested (the
    messages found, and the tagged ones that may fill the list)."""
    lookup = read_prebuilt(prebuilt_file)
    records = lookup.matcher.records
    assert isinstance(records, LazyRecords)
    for typed in ("", "avg pool", "AUTODIFF", "shape", "Tensor", "reshape", *TYPED):
        before = records.validations
        suggested = lookup.suggest(typed)
        assert suggested == source.suggest(typed), typed
        assert records.validations - before <= 2 * len(suggested), typed
    assert records.validations < 400  # of 5,511


def test_a_corrupt_suggest_section_is_refused_when_first_read(tmp_path: Path, seeds_bytes: bytes) -> None:
    header, body = _split(seeds_bytes)
    start, _ = header["suggest"]
    flipped = bytearray(seeds_bytes)
    flipped[body + start + 5] ^= 0xFF
    path = tmp_path / "suggest.pbcat"
    path.write_bytes(bytes(flipped))
    lookup = read_prebuilt(path)  # lookups do not need it
    assert lookup.lookup("avg pool 2d backward").best is not None
    with pytest.raises(PrebuiltError, match=r"corrupt suggest section.*panicbot catalog build"):
        lookup.suggest("avg")


def test_a_jsonl_catalog_round_trips(tmp_path: Path) -> None:
    """A JSONL catalog with no side tables: every record as loaded, typed queries answered alike."""
    catalog = load_catalog([SEEDS_FILE])
    source = PanicLookup(catalog)
    path = tmp_path / "seeds.pbcat"
    write_prebuilt(source, path)
    prebuilt = read_prebuilt(path)
    assert list(prebuilt.matcher.records) == catalog.records
    assert_same_answers(source, prebuilt, [*seed_pastes()[:40], *TYPED])


# --- refusals ------------------------------------------------------------------------------------------


def _split(data: bytes) -> tuple[dict[str, Any], int]:
    end = data.index(b"\n", len(MAGIC))
    return json.loads(data[len(MAGIC) : end]), end + 1


def _refused(path: Path, data: bytes, words: str) -> None:
    path.write_bytes(data)
    with pytest.raises(PrebuiltError) as refused:
        read_prebuilt(path)
    message = str(refused.value)
    assert str(path) in message and "panicbot catalog build" in message and "\n" not in message
    assert words in message


@pytest.fixture(scope="module")
def seeds_bytes() -> bytes:
    return prebuilt_bytes(PanicLookup(load_catalog([SEEDS_FILE])))


def test_a_foreign_file_is_refused(tmp_path: Path) -> None:
    _refused(tmp_path / "x.pbcat", SEEDS_FILE.read_bytes(), "bad magic")
    _refused(tmp_path / "x.pbcat", b"", "bad magic")
    _refused(tmp_path / "x.pbcat", MAGIC + b"not json\n", "corrupt header")


def test_a_stale_file_is_refused(tmp_path: Path, seeds_bytes: bytes) -> None:
    header, body = _split(seeds_bytes)
    header["fingerprint"] = "0" * 64
    data = MAGIC + json.dumps(header).encode() + b"\n" + seeds_bytes[body:]
    _refused(tmp_path / "stale.pbcat", data, "stale")


def test_corrupt_files_are_refused(tmp_path: Path, seeds_bytes: bytes) -> None:
    header, body = _split(seeds_bytes)
    flipped = bytearray(seeds_bytes)
    flipped[body + 100] ^= 0xFF  # in the index section
    _refused(tmp_path / "flipped.pbcat", bytes(flipped), "sha256")
    _refused(tmp_path / "short.pbcat", seeds_bytes[:-10], "corrupt header")
    _refused(tmp_path / "long.pbcat", seeds_bytes + b"x", "size")
    header["format"] = 99
    data = MAGIC + json.dumps(header).encode() + b"\n" + seeds_bytes[body:]
    _refused(tmp_path / "format.pbcat", data, "format 99")


class _Smuggled:
    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, ("echo smuggled > /dev/null",))


def _with_index(seeds_bytes: bytes, index: bytes) -> bytes:
    """A well-formed file (right fingerprint and hash) around another index section."""
    header, body = _split(seeds_bytes)
    start, length = header["records_blob"]
    blob = seeds_bytes[body + start : body + start + length]
    start, length = header["suggest"]
    suggest = seeds_bytes[body + start : body + start + length]
    header["index"] = [0, len(index)]
    header["records_blob"] = [len(index), len(blob)]
    header["suggest"] = [len(index) + len(blob), len(suggest)]
    header["index_sha256"] = hashlib.sha256(index).hexdigest()
    return MAGIC + json.dumps(header).encode() + b"\n" + index + blob + suggest


def test_a_pickle_smuggling_os_system_is_refused(
    tmp_path: Path, seeds_bytes: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = pickle.dumps({"matcher": _Smuggled()}, protocol=5)
    assert b"system" in index
    called: list[object] = []
    monkeypatch.setattr(os, "system", lambda *args: called.append(args) or 0)
    monkeypatch.setattr(f"{os.name}.system", lambda *args: called.append(args) or 0)
    _refused(tmp_path / "evil.pbcat", _with_index(seeds_bytes, index), "refused global")
    assert called == []


def test_an_index_of_another_shape_is_refused(tmp_path: Path, seeds_bytes: bytes) -> None:
    _refused(tmp_path / "list.pbcat", _with_index(seeds_bytes, pickle.dumps([1, 2])), "expected shape")
    _refused(tmp_path / "junk.pbcat", _with_index(seeds_bytes, b"\x80\x05junk"), "index refused")


def test_a_missing_file_is_an_error_not_an_exception(tmp_path: Path) -> None:
    with pytest.raises(PrebuiltError, match="cannot read"):
        read_prebuilt(tmp_path / "absent.pbcat")


def test_a_record_that_is_not_the_one_the_index_holds_is_refused(tmp_path: Path) -> None:
    """A file overwritten in place (`cp` over a served file) under an index already read: a record read at
    a position must be the one the index put there, or it is refused rather than answered."""
    base = json.loads(SEEDS_FILE.read_text(encoding="utf-8").splitlines()[0])
    twins = []
    for record_id in ("aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"):
        line = json.loads(json.dumps(base))
        line["record"]["id"] = record_id
        twins.append(json.dumps(line))
    source = tmp_path / "twins.jsonl"
    source.write_text("\n".join(twins) + "\n", encoding="utf-8")
    swapped = tmp_path / "swapped.jsonl"
    swapped.write_text("\n".join(reversed(twins)) + "\n", encoding="utf-8")
    path = tmp_path / "twins.pbcat"
    write_prebuilt(PanicLookup(load_catalog([source])), path)
    served = read_prebuilt(path)
    replacement = prebuilt_bytes(PanicLookup(load_catalog([swapped])))
    with path.open("r+b") as handle:  # same records, same lengths, other order: offsets still fit
        handle.write(replacement)
        handle.truncate()
    # Its crc32 is not the index's (the identity check after it would refuse it too).
    with pytest.raises(PrebuiltError, match=r"record 0 is damaged \(its crc32\)|not the one the index holds"):
        served.matcher.records[0]


def test_records_are_stored_compressed_and_one_that_inflates_past_the_bound_is_refused(
    tmp_path: Path, seeds_bytes: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = Parts.of(seeds_bytes)
    index = pickle.loads(parts.index)
    offsets, dictionary = index["record_offsets"], index["record_dictionary"]
    stored = [parts.blob[start:end] for start, end in itertools.pairwise(offsets)]
    texts = [zlib.decompressobj(zdict=dictionary).decompress(one) for one in stored]
    assert all(text.startswith(b'{"id":') for text in texts)
    assert sum(map(len, stored)) < sum(map(len, texts)) / 2  # the seeds' JSON, less than half as large
    # Record 0 becomes a stream that inflates to a whole record past the bound (its crc32 made to fit, so
    # that what is tested is the bound, not the checksum).
    stream = zlib.compressobj(zdict=dictionary)
    bomb = stream.compress(texts[0][:-1] + b" " * (max(map(len, texts)) + 5_000) + b"}") + stream.flush()
    blob = bomb + b"".join(stored[1:])
    ends = [len(bomb) + end - offsets[1] for end in offsets[1:]]
    index["record_offsets"] = array(offsets.typecode, [0, *ends])
    index["record_crc32"][0] = zlib.crc32(bomb)
    parts.index, parts.blob = pickle.dumps(index, protocol=5), blob
    path = tmp_path / "bomb.pbcat"
    path.write_bytes(parts.joined())
    monkeypatch.setattr(prebuilt_module, "MAX_RECORD_BYTES", max(map(len, texts)) + 1_000)
    lookup = read_prebuilt(path)
    assert lookup.matcher.records[1].id == json.loads(texts[1])["id"]  # the others read as they were
    with pytest.raises(PrebuiltError, match="record 0 is corrupt"):
        lookup.matcher.records[0]
    monkeypatch.setattr(prebuilt_module, "MAX_RECORD_BYTES", max(map(len, texts)) + 10_000)
    assert read_prebuilt(path).matcher.records[0].id == json.loads(texts[0])["id"]  # within it: read


def test_the_records_read_most_recently_stay_validated(
    prebuilt_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record read again and again (the answer to many pastes of a batch) is validated once while other
    records stream past it; the least recently read leave first."""
    import bot.prebuilt as prebuilt_module

    monkeypatch.setattr(prebuilt_module, "RECORD_CACHE_SIZE", 4)
    records = read_prebuilt(prebuilt_file).matcher.records
    assert isinstance(records, LazyRecords)
    for other in range(1, 40):
        assert records[0].id == records[0].id
        records[other]
    assert records.validations == 40  # record 0 once, and each of the 39 others
    records[1]
    assert records.validations == 41  # read 38 records ago: gone


def test_records_never_matched_are_listed_reading_only_those_shown(
    source: PanicLookup, prebuilt_file: Path
) -> None:
    """The console's "never matched" list: analysed records first, in catalog order within each; over a
    prebuilt catalog only the records shown are read (not the thousands, on the service's event loop)."""
    lookup = read_prebuilt(prebuilt_file)
    records = lookup.matcher.records
    assert isinstance(records, LazyRecords)
    everything = list(source.matcher.records)
    matched = {record.id for record in everything[::3]}
    expected = sorted((r for r in everything if r.id not in matched), key=lambda r: not r.has_analysis)
    assert lookup.unmatched(matched, 20) == (expected[:20], len(expected))
    assert records.validations <= 20
    assert source.unmatched(matched, 20) == (expected[:20], len(expected))


def test_a_prebuilt_lookup_is_written_again_as_it_was_read(tmp_path: Path) -> None:
    """An index read in place (its dicts of arrays are views of packed arrays) packs again into the same
    file, which answers the same."""
    path = tmp_path / "seeds.pbcat"
    write_prebuilt(PanicLookup(load_catalog([SEEDS_FILE])), path)
    once = read_prebuilt(path)
    again = tmp_path / "again.pbcat"
    write_prebuilt(once, again)
    assert again.read_bytes() == path.read_bytes()
    assert_same_answers(once, read_prebuilt(again), [*seed_pastes()[:40], *TYPED])
