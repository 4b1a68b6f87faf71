"""The embedded catalog's prebuilt cache (adapters/default_cache.py): written on the first start, read on
later ones with the same answers, keyed by the data and the code, and never a problem for the user: an
unwritable folder, a damaged, stale or foreign file all fall back to the JSONL path (and a bad file is
replaced)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pydantic
import pytest

import bot
from adapters import default_cache
from adapters.cli import main as cli
from bot.lookup import PanicLookup
from bot.prebuilt import MAGIC, LazyRecords
from bot.records import Catalog, default_catalog
from tests.support.pastes import all_cases, shared_data_dir
from tests.support.release_pastes import release_cases

ROOT = Path(cli.__file__).resolve().parents[2]
PASTE = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:915:9:\n"
    "Can't differentiate deform conv 2d backward.\n"
)


@pytest.fixture(autouse=True)
def no_real_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a test sets, nothing goes to the real home: HOME and XDG_CACHE_HOME point into tmp_path."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.delenv(default_cache.CACHE_DIR_ENV, raising=False)
    monkeypatch.delenv("PANICBOT_CATALOG", raising=False)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv(default_cache.CACHE_DIR_ENV, str(path))
    return path


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return default_catalog()


@pytest.fixture(scope="module")
def source(catalog: Catalog) -> PanicLookup:
    return PanicLookup(catalog)


@pytest.fixture(scope="module")
def cache_bytes(source: PanicLookup) -> bytes:
    """A cache file's bytes, as the first start writes them."""
    from bot.prebuilt import prebuilt_bytes

    return prebuilt_bytes(source)


def cache_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("embedded-*.pbcat"))


def open_default() -> PanicLookup:
    return default_cache.open_default_lookup(os.environ)


def answer(lookup: PanicLookup, text: str = PASTE) -> object:
    result = lookup.lookup(text)
    return lookup.answer_json(result)


@pytest.fixture
def no_jsonl(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Reading the JSONL is a failure of the test: the lookup must come from the cache."""

    def refuse() -> Catalog:
        raise AssertionError("the embedded JSONL was read")

    monkeypatch.setattr(default_cache, "default_catalog", refuse)
    yield


# ---- where the cache is -------------------------------------------------------------------------------


def test_the_cache_folder_follows_the_environment() -> None:
    where = default_cache.cache_dir
    assert where({"PANICBOT_CACHE_DIR": "/srv/cache", "XDG_CACHE_HOME": "/x"}) == Path("/srv/cache")
    assert where({"XDG_CACHE_HOME": "/x", "HOME": "/home/u"}) == Path("/x/panicbot")
    assert where({"HOME": "/home/u"}) == Path("/home/u/.cache/panicbot")
    assert where({"XDG_CACHE_HOME": "relative", "HOME": "/home/u"}) == Path("/home/u/.cache/panicbot")
    assert where({}) is None  # no home: no cache, and no error
    for off in ("", "off", "OFF", " none ", "0", "false", "no"):
        assert where({"PANICBOT_CACHE_DIR": off, "HOME": "/home/u"}) is None, off


# ---- written, reused, same answers --------------------------------------------------------------------


def test_the_first_start_writes_the_cache_and_the_next_reads_it(
    folder: Path, monkeypatch: pytest.MonkeyPatch, source: PanicLookup
) -> None:
    first = open_default()
    assert not isinstance(first.matcher.records, LazyRecords)  # the JSONL path
    [written] = cache_files(folder)
    assert default_cache.NAME.match(written.name)["key"] == default_cache.cache_key()  # type: ignore[index]
    assert list(folder.iterdir()) == [written]  # no temporary file left
    stamp = written.stat().st_mtime_ns

    monkeypatch.setattr(default_cache, "default_catalog", lambda: pytest.fail("the JSONL was read"))
    second = open_default()
    assert isinstance(second.matcher.records, LazyRecords)
    assert len(second.matcher) == len(source.matcher) > 5000
    assert answer(second) == answer(first) == answer(source)
    assert cache_files(folder) == [written] and written.stat().st_mtime_ns == stamp  # read, not rewritten


def test_the_xdg_cache_home_is_the_default_folder(tmp_path: Path) -> None:
    open_default()
    assert len(cache_files(tmp_path / "xdg-cache" / "panicbot")) == 1
    assert not (tmp_path / "home").exists()


def test_the_cached_lookup_answers_as_the_jsonl_does(
    folder: Path, catalog: Catalog, source: PanicLookup, no_jsonl: None, cache_bytes: bytes
) -> None:
    """A few hundred pastes of every format (and release pastes of the embedded catalog): same JSON."""
    folder.mkdir()
    key = default_cache.cache_key()
    (folder / default_cache.cache_name(key, cache_bytes)).write_bytes(cache_bytes)
    cached = open_default()
    assert isinstance(cached.matcher.records, LazyRecords)
    cases = all_cases(shared_data_dir(), seed=0, per_format=20)
    texts = [case.text for case in cases] + [case.text for case in release_cases(catalog, count=120)]
    assert len(texts) > 300
    for text in texts:
        assert answer(cached, text) == answer(source, text), text[:200]
        want, got = source.lookup(text), cached.lookup(text)
        if want.best is not None:
            assert cached.card(got) == source.card(want), text[:200]


def test_a_cache_written_after_lookups_answers_the_same(
    folder: Path, catalog: Catalog, source: PanicLookup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is written from a lookup that may already have answered (lazily parsed tables included)."""
    used = PanicLookup(catalog)
    texts = [case.text for case in release_cases(catalog, seed=1, count=60)]
    for text in texts:
        used.lookup(text)
    assert default_cache.write_cache(folder, default_cache.cache_key(), used) is not None
    monkeypatch.setattr(default_cache, "default_catalog", lambda: pytest.fail("the JSONL was read"))
    cached = open_default()
    for text in texts:
        assert answer(cached, text) == answer(source, text), text[:200]


def test_the_command_line_answers_the_same_with_and_without_the_cache(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = []
    for cache in ("off", str(folder), str(folder)):  # no cache, writing it, reading it
        monkeypatch.setenv(default_cache.CACHE_DIR_ENV, cache)
        out = io.StringIO()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(PASTE.encode()), encoding="utf-8"))
        assert cli.main(["lookup", "--json"], out=out) == cli.EXIT_OK
        outputs.append(out.getvalue())
        assert capsys.readouterr().err == ""
    assert outputs[0] == outputs[1] == outputs[2]
    assert json.loads(outputs[0])["status"] == "matched"
    assert len(cache_files(folder)) == 1


def test_card_uses_the_cache_too(folder: Path, source: PanicLookup) -> None:
    record_id = source.matcher.records[0].id
    texts = []
    for _ in range(2):
        out = io.StringIO()
        assert cli.main(["card", record_id, "--format", "text"], out=out) == cli.EXIT_OK
        texts.append(out.getvalue())
        assert len(cache_files(folder)) == 1
    assert texts[0] == texts[1] != ""


# ---- the off switch -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["off", ""])
def test_the_off_switch_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(default_cache.CACHE_DIR_ENV, value)
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    lookup = open_default()
    assert not isinstance(lookup.matcher.records, LazyRecords)
    assert sorted(tmp_path.rglob("*")) == before


# ---- the key ------------------------------------------------------------------------------------------


@pytest.fixture
def package_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of bot/ (sources and data) that the key is computed from."""
    original = Path(bot.__file__).parent
    copy = tmp_path / "bot"
    shutil.copytree(original, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(default_cache, "bot", SimpleNamespace(__file__=str(copy / "__init__.py")))
    return copy


def test_the_key_changes_with_every_data_file(package_copy: Path) -> None:
    key = default_cache.cache_key()
    assert default_cache.cache_key() == key  # stable
    for name in (
        "default_catalog.jsonl",
        "rust_runtime.jsonl",
        "ecosystem.jsonl.gz",
        "ecosystem.sites.jsonl.gz",
    ):
        path = package_copy / "data" / name
        content = path.read_bytes()
        path.write_bytes(content + b"\n")
        assert default_cache.cache_key() != key, name
        path.write_bytes(content)
        assert default_cache.cache_key() == key
    (package_copy / "data" / "more.jsonl").write_bytes(b"")
    assert default_cache.cache_key() != key


def test_the_key_changes_with_the_code(package_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = default_cache.cache_key()
    extract = package_copy / "extract.py"  # not among the prebuilt file's own fingerprint modules
    extract.write_text(extract.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    changed = default_cache.cache_key()
    assert changed != key
    monkeypatch.setattr("bot.prebuilt.code_fingerprint", lambda: "0" * 64)
    assert default_cache.cache_key() != changed
    monkeypatch.setattr(pydantic, "VERSION", "0.0.0")
    assert default_cache.cache_key() not in (key, changed)


def test_a_new_key_replaces_the_old_files_and_keeps_the_rest(
    folder: Path, monkeypatch: pytest.MonkeyPatch, source: PanicLookup
) -> None:
    monkeypatch.setattr(default_cache, "cache_key", lambda: "a" * 32)
    open_default()
    [old] = cache_files(folder)
    (folder / "notes.txt").write_text("mine")
    (folder / "embedded-not-ours.pbcat").write_text("mine too")  # not a cache file's name
    monkeypatch.setattr(default_cache, "cache_key", lambda: "b" * 32)
    lookup = open_default()
    assert not isinstance(lookup.matcher.records, LazyRecords)  # the old key's file was not read
    [new] = [path for path in cache_files(folder) if default_cache.NAME.match(path.name)]
    assert new.name.startswith("embedded-" + "b" * 32) and not old.exists()
    assert (folder / "notes.txt").exists() and (folder / "embedded-not-ours.pbcat").exists()
    assert answer(lookup) == answer(source)


def test_forgotten_temporary_files_are_removed_and_fresh_ones_kept(folder: Path) -> None:
    folder.mkdir()
    forgotten = folder / ".embedded-abc.tmp"
    in_flight = folder / ".embedded-def.tmp"
    forgotten.write_bytes(b"half")
    in_flight.write_bytes(b"half")
    old = time.time() - 2 * default_cache.FORGOTTEN_TEMPORARY_SECONDS
    os.utime(forgotten, (old, old))
    open_default()
    assert not forgotten.exists() and in_flight.exists()


# ---- damaged, stale, foreign files --------------------------------------------------------------------


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def _damaged(data: bytes) -> dict[str, bytes]:
    header_end = data.index(b"\n", len(MAGIC)) + 1
    header = json.loads(data[len(MAGIC) : header_end])
    blob_start = header_end + header["records_blob"][0]
    stale_header = data[:header_end].replace(header["fingerprint"].encode(), b"0" * 64)
    return {
        "empty": b"",
        "truncated": data[: len(data) // 2],
        "garbage": b"not a catalog at all\n" * 100,
        "index byte": _flip(data, header_end + 1000),
        "record byte": _flip(data, blob_start + 100),  # a byte of a record (compressed): its crc32 fails
        "stale": stale_header + data[header_end:],
        "padded": data + b"\0",
    }


@pytest.mark.parametrize(
    "damage", ["empty", "truncated", "garbage", "index byte", "record byte", "stale", "padded"]
)
def test_a_bad_cache_file_falls_back_and_is_replaced(
    folder: Path, source: PanicLookup, cache_bytes: bytes, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder.mkdir()
    key = default_cache.cache_key()
    name = default_cache.cache_name(key, cache_bytes)
    bad = _damaged(cache_bytes)[damage]
    (folder / name).write_bytes(bad)
    lookup = open_default()
    assert not isinstance(lookup.matcher.records, LazyRecords)  # refused: answered from the JSONL
    assert answer(lookup) == answer(source)
    assert [path.name for path in cache_files(folder)] == [name]
    assert (folder / name).read_bytes() != bad  # replaced by a good one...
    monkeypatch.setattr(default_cache, "default_catalog", lambda: pytest.fail("the JSONL was read"))
    assert isinstance(open_default().matcher.records, LazyRecords)  # ...that the next start reads


def test_a_damaged_record_is_caught_before_any_lookup(folder: Path, cache_bytes: bytes) -> None:
    """`read_prebuilt` alone would accept a changed record (it reads records when a lookup shows them): the
    records digest in the name refuses it at the start."""
    from bot.prebuilt import read_prebuilt

    folder.mkdir()
    key = default_cache.cache_key()
    path = folder / default_cache.cache_name(key, cache_bytes)
    path.write_bytes(_damaged(cache_bytes)["record byte"])
    read_prebuilt(path)  # accepted by the file's own checks
    assert default_cache.read_cached(folder, key) is None
    assert not path.exists()


def test_a_file_of_another_user_is_not_read(
    folder: Path, cache_bytes: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder.mkdir()
    key = default_cache.cache_key()
    (folder / default_cache.cache_name(key, cache_bytes)).write_bytes(cache_bytes)
    assert default_cache.read_cached(folder, key) is not None
    monkeypatch.setattr(os, "getuid", lambda: os.stat(folder).st_uid + 1)
    assert default_cache.read_cached(folder, key) is None


def test_a_damaged_file_through_the_command_line_is_silent(folder: Path, cache_bytes: bytes) -> None:
    folder.mkdir()
    key = default_cache.cache_key()
    (folder / default_cache.cache_name(key, cache_bytes)).write_bytes(_damaged(cache_bytes)["index byte"])
    done = subprocess.run(
        [sys.executable, "-m", "adapters.cli.main", "lookup", "--json"],
        input=PASTE,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == cli.EXIT_OK and done.stderr == ""
    assert json.loads(done.stdout)["status"] == "matched"
    assert default_cache.read_cached(folder, key) is not None  # replaced by a good one


# ---- a folder that cannot be written ------------------------------------------------------------------


def test_a_folder_that_cannot_be_made_falls_back_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: PanicLookup, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(default_cache.CACHE_DIR_ENV, str(blocker / "cache"))  # works even as root
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(PASTE.encode()), encoding="utf-8"))
    assert cli.main(["lookup", "--json"], out=out) == cli.EXIT_OK
    assert json.loads(out.getvalue()) == answer(source)
    assert capsys.readouterr().err == ""
    assert blocker.read_text() == "not a folder"


def test_a_read_only_folder_costs_no_build(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary file is made first: a folder refusing it is known before the bytes are built."""

    def read_only(*args: object, **kwargs: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", read_only)
    monkeypatch.setattr("bot.prebuilt.prebuilt_bytes", lambda lookup: pytest.fail("bytes built for nothing"))
    lookup = open_default()
    assert len(lookup.matcher) > 5000
    assert cache_files(folder) == []


def test_a_full_disk_leaves_no_file(
    folder: Path, monkeypatch: pytest.MonkeyPatch, source: PanicLookup
) -> None:
    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    lookup = open_default()
    assert answer(lookup) == answer(source)
    assert list(folder.iterdir()) == []  # the temporary file is gone too


def test_a_failing_build_of_the_bytes_is_no_error(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(lookup: PanicLookup) -> bytes:
        raise TypeError("cannot pack mixed values")

    monkeypatch.setattr("bot.prebuilt.prebuilt_bytes", broken)
    assert len(open_default().matcher) > 5000
    assert list(folder.iterdir()) == []


def test_concurrent_first_starts_leave_one_whole_file(folder: Path, source: PanicLookup) -> None:
    """Three first starts at once, each writing the cache: one file, whole and read by the next start."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "adapters.cli.main", "lookup", "--json"]
    starts = [
        subprocess.Popen(
            command, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    for start in starts:
        out, err = start.communicate(PASTE.encode(), timeout=120)
        assert start.returncode == cli.EXIT_OK and err == b""
        assert json.loads(out) == answer(source)
    [written] = list(folder.iterdir())  # no temporary file either
    assert default_cache.NAME.match(written.name)
    assert default_cache.read_cached(folder, default_cache.cache_key()) is not None
