"""The checks a prebuilt catalog's index passes before it serves (`bot.prebuilt`): every table is of the
type and length the code expects, and every number that is a position (of a record, of a group, of a word,
of a slice of a packed array) is within what it points into. A file that passes its sha256 can still be
crafted (or written by a bug): what these checks find is refused at load, with the table named, instead of
an IndexError, a TypeError or a wrong record at the first lookup.

What is not checked here (the release table's rows and function tables, kept as text and parsed when a
lookup first needs them) is refused when read: `bot.prebuilt` turns any error of a lookup over a prebuilt
file into its PrebuiltError.

Each check raises IndexCheckError naming the table; `check_index` returns nothing."""

from __future__ import annotations

import dataclasses
import functools
import threading
import types
import typing
from array import array
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from bot.releases import ReleaseTable

# Every table of the matcher's exported state (bot.matcher.Matcher.export_state), by how it is checked.
MATCHER_FIELDS = frozenset(
    {
        "_keys",
        "_group_keys",
        "_member_start",
        "_members",
        "_large_group_files",
        "_record_group",
        "_specificity",
        "_placeholders",
        "_words",
        "_paths",
        "_lines",
        "_anchors",
        "_pair_anchors",
        "_unanchored",
        "_postings",
        "_by_path",
        "_path_lines",
        "_paths_by_basename",
        "_paths_by_ending",
        "_near_pools",
        "_regexes",
        "_anchor_start",
        "_anchor_words",
    }
)
INDEX_FIELDS = frozenset(
    {
        "matcher",
        "positions",
        "version_names",
        "version_codes",
        "under_review",
        "releases",
        "covered",
        "record_offsets",
        "record_crc32",
        "record_dictionary",
    }
)
INTEGER_TYPECODES = "bBhHiIlLqQ"
MAX_DICTIONARY_BYTES = 32 * 1024  # zlib's window: a longer dictionary is only its end


class IndexCheckError(ValueError):
    """A table of the index that is not what the code that reads it expects."""


def _require(condition: bool, table: str, why: str) -> None:
    if not condition:
        raise IndexCheckError(f"{table}: {why}")


def _only(values: Iterable[object], allowed: tuple[type, ...], table: str) -> None:
    """Every value is exactly of one of the `allowed` types (no subclass: a pickle can make only these),
    checked at C speed (the set of their types)."""
    found = set(map(type, values))
    if not found.issubset(allowed):
        raise IndexCheckError(f"{table}: holds {_names(found.difference(allowed))}")


def _list(value: object, table: str, allowed: tuple[type, ...], length: int | None = None) -> list[Any]:
    """A list of values of the `allowed` types (of `length` items when given). The items of a tuple item
    (a path's parts) are not looked at: one of another type fails the lookup that reads it, refused."""
    _require(type(value) is list, table, "not a list")
    assert isinstance(value, list)
    if length is not None:
        _require(len(value) == length, table, f"{len(value)} items, {length} expected")
    _only(value, allowed, table)
    return value


def _numbers(value: array[int]) -> npt.NDArray[Any]:
    """An integer array's items as numpy sees them in place (min, max and order at C speed)."""
    return np.frombuffer(value, dtype=np.dtype(value.typecode)) if len(value) else np.zeros(0, np.int64)


def _array(value: object, table: str, length: int | None = None, below: int | None = None) -> array[int]:
    """An array of integers; of `length` items when given; each in [0, below) when `below` is given."""
    _require(type(value) is array, table, "not an array")
    assert isinstance(value, array)
    _require(value.typecode in INTEGER_TYPECODES, table, f"array of typecode {value.typecode!r}")
    if length is not None:
        _require(len(value) == length, table, f"{len(value)} items, {length} expected")
    if below is not None and len(value):
        numbers = _numbers(value)
        _require(
            int(numbers.min()) >= 0 and int(numbers.max()) < below,
            table,
            f"a position past its end ({below})",
        )
    return value


def _ascending(value: array[int], strictly: bool = False) -> bool:
    numbers = _numbers(value)
    if strictly:
        return bool(np.all(numbers[1:] > numbers[:-1]))
    return bool(np.all(numbers[1:] >= numbers[:-1]))


def _ends(ends: object, table: str, total: int, count: int) -> None:
    """The end offsets of `count` slices of an array of `total` items: ascending, the last at `total`."""
    checked = _array(ends, f"{table} ends", length=count, below=total + 1)
    _require(_ascending(checked), table, "slice ends not in order")
    _require(not count or checked[-1] == total, table, "slices do not cover the array")


def _packed_arrays(value: object, table: str, key: type, below: int | None) -> list[Any]:
    _require(type(value) is tuple and len(value) == 4 and value[0] == "arrays", table, "not packed arrays")
    assert isinstance(value, tuple)
    _, keys, whole, ends = value
    keys = _list(keys, table, (key,))
    whole = _array(whole, table, below=below)
    _ends(ends, table, len(whole), len(keys))
    return keys


def _packed_nested(value: object, table: str, below: int) -> None:
    _require(type(value) is tuple and len(value) == 6 and value[0] == "nested", table, "not packed nested")
    assert isinstance(value, tuple)
    _, outer, counts, inner, whole, ends = value
    outer = _list(outer, table, (str,))
    inner = _list(inner, table, (str,))
    counts = _array(counts, f"{table} counts", length=len(outer))
    _require(int(_numbers(counts).sum()) == len(inner), table, "inner key counts do not add up")
    whole = _array(whole, table, below=below)
    _ends(ends, table, len(whole), len(inner))


def check_matcher(state: object, records: int) -> None:
    """The matcher's exported state, against its `records` records."""
    _require(type(state) is dict, "matcher", "not a dict")
    assert isinstance(state, dict)
    _require(set(state) == MATCHER_FIELDS, "matcher", "not the tables this code reads")
    _list(state["_keys"], "_keys", (str, tuple), length=records)
    groups = len(_list(state["_group_keys"], "_group_keys", (str, tuple)))
    _require(0 < groups <= records, "_group_keys", f"{groups} groups for {records} records")
    members = _array(state["_members"], "_members", length=records, below=records)
    member_start = _array(state["_member_start"], "_member_start", length=groups + 1)
    _require(member_start[0] == 0, "_member_start", "does not start at 0")
    _ends(member_start[1:], "_member_start", len(members), groups)
    _array(state["_record_group"], "_record_group", length=records, below=groups)
    for name in ("_specificity", "_placeholders", "_words", "_lines"):
        _array(state[name], name, length=records)
    _list(state["_paths"], "_paths", (tuple,), length=records)
    large = state["_large_group_files"]
    _require(type(large) is dict, "_large_group_files", "not a dict")
    for group, by_name in large.items():
        _require(type(group) is int and 0 <= group < groups, "_large_group_files", "a group past the end")
        _require(type(by_name) is dict, "_large_group_files", "not a dict of arrays")
        _only(by_name, (str,), "_large_group_files")
        for ids in by_name.values():
            _array(ids, "_large_group_files", below=records)
    words = len(_packed_arrays(state["_postings"], "_postings", str, below=records))
    _packed_arrays(state["_anchors"], "_anchors", str, below=groups)
    _packed_nested(state["_pair_anchors"], "_pair_anchors", below=groups)
    _array(state["_unanchored"], "_unanchored", below=groups)
    by_path = _packed_arrays(state["_by_path"], "_by_path", tuple, below=records)
    path_lines = _packed_arrays(state["_path_lines"], "_path_lines", tuple, below=None)
    _require(by_path == path_lines, "_path_lines", "not the files of _by_path")
    _require(state["_by_path"][3] == state["_path_lines"][3], "_path_lines", "not the lengths of _by_path")
    for name in ("_paths_by_basename", "_paths_by_ending"):
        table = state[name]
        _require(type(table) is dict, name, "not a dict")
        _only(table, (str, tuple), name)
        _only(table.values(), (list,), name)
        for paths in table.values():
            _only(paths, (tuple,), name)
    near = state["_near_pools"]
    _require(type(near) is dict, "_near_pools", "not a dict")
    _only(near, (int,), "_near_pools")
    _only(near.values(), (list,), "_near_pools")
    for pool in near.values():
        _only(pool, (str,), "_near_pools")
    regexes = state["_regexes"]
    _require(type(regexes) is list, "_regexes", "not a list")
    for item in regexes:
        _require(
            type(item) is tuple
            and len(item) == 2
            and type(item[0]) is int
            and 0 <= item[0] < groups
            and type(item[1]) is str,
            "_regexes",
            "not (group, pattern) pairs",
        )
    anchor_words = _array(state["_anchor_words"], "_anchor_words", below=words)
    anchor_start = _array(state["_anchor_start"], "_anchor_start", length=groups + 1)
    _require(anchor_start[0] == 0, "_anchor_start", "does not start at 0")
    _ends(anchor_start[1:], "_anchor_start", len(anchor_words), groups)


def check_index(index: object, records: int, blob_length: int) -> None:
    """The whole index of a prebuilt file holding `records` records in a records blob of `blob_length`
    bytes (both from its header, already bounded by the file's size)."""
    _require(type(index) is dict, "index", "not a dict")
    assert isinstance(index, dict)
    _require(set(index) == INDEX_FIELDS, "index", "not the tables this code reads")
    _require(0 < records <= blob_length, "records", f"{records} records in {blob_length} bytes")
    offsets = _array(index["record_offsets"], "record_offsets", length=records + 1, below=blob_length + 1)
    _require(offsets[0] == 0 and offsets[-1] == blob_length, "record_offsets", "do not span the records blob")
    _require(_ascending(offsets, strictly=True), "record_offsets", "not ascending")
    _array(index["record_crc32"], "record_crc32", length=records)
    dictionary = index["record_dictionary"]
    _require(type(dictionary) is bytes, "record_dictionary", "not bytes")
    _require(len(dictionary) <= MAX_DICTIONARY_BYTES, "record_dictionary", "longer than zlib takes")
    positions = index["positions"]
    _require(type(positions) is dict and len(positions) == records, "positions", "not one per record")
    _only(positions, (str,), "positions")
    _only(positions.values(), (int,), "positions")
    _require(
        min(positions.values()) >= 0 and max(positions.values()) < records, "positions", "past the records"
    )
    names = index["version_names"]
    _require(type(names) is list and len(names) > 0, "version_names", "not a list of versions")
    _only(names, (str, type(None)), "version_names")
    _array(index["version_codes"], "version_codes", length=records, below=len(names))
    under_review = index["under_review"]
    _require(type(under_review) is frozenset, "under_review", "not a frozenset")
    _only(under_review, (str,), "under_review")
    covered = index["covered"]
    _require(type(covered) is dict, "covered", "not a dict")
    _only(covered, (str,), "covered")
    _only(covered.values(), (str,), "covered")
    check_matcher(index["matcher"], records)
    check_release_table(index["releases"])


def check_release_table(table: object) -> None:
    """The release table, every field of the type its annotation says (a portable table: texts, not the
    functions that make them)."""
    _require(type(table) is ReleaseTable, "releases", "not a release table")
    with _SHAPES_LOCK:  # the checkers are made once; what one check has seen is its own
        _SHAPES.forget()
        try:
            _SHAPES.check(table, ReleaseTable, "releases")
        finally:
            _SHAPES.forget()


Checker = Callable[[object, str], None]


class _Shapes:
    """Checks a value against a type annotation: builtin containers, unions, dataclasses (exactly their
    fields). Each annotation is made into a checker once; a container of plain values (`list[str]`) is
    checked by the set of its items' types. A container or dataclass object met twice under the same
    annotation is checked once (the release table shares its Release objects)."""

    def __init__(self) -> None:
        self._seen: set[tuple[int, int]] = set()
        self._made: dict[object, Checker] = {}
        self._field_checkers: dict[type, dict[str, Checker]] = {}

    def forget(self) -> None:
        """Forget the objects checked (their ids may be reused by the next table's)."""
        self._seen.clear()

    def check(self, value: object, hint: Any, where: str) -> None:
        self.checker(hint)(value, where)

    def checker(self, hint: Any) -> Checker:
        made = self._made.get(hint)
        if made is None:
            made = self._made[hint] = self._make(hint)
        return made

    def _make(self, hint: Any) -> Checker:
        plain = _plain(hint)
        if plain is not None:
            allowed = frozenset(plain)

            def check_plain(value: object, where: str) -> None:
                if type(value) not in allowed:
                    raise IndexCheckError(f"{where}: a {type(value).__name__}, not {_names(allowed)}")

            return check_plain
        if hint is Any:
            return lambda value, where: None
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            return functools.partial(self._dataclass, kind=hint)
        origin = typing.get_origin(hint)
        arguments = typing.get_args(hint)
        if origin in (typing.Union, types.UnionType):
            # Plain types first: they are the cheap check, and the usual answer (a row kept as text).
            ordered = sorted(
                (kind for kind in arguments if not _is_callable_hint(kind)),
                key=lambda kind: _plain(kind) is None,
            )
            kinds = [self.checker(kind) for kind in ordered]

            def check_union(value: object, where: str) -> None:
                for kind in kinds:
                    try:
                        kind(value, where)
                    except IndexCheckError:
                        continue
                    return
                raise IndexCheckError(f"{where}: a {type(value).__name__}, not {hint}")

            return check_union
        if origin in (dict, Mapping):
            return self._container(dict, hint, [self._items(arguments[0]), self._items(arguments[1])])
        if origin in (list, set, frozenset):
            return self._container(origin, hint, [self._items(arguments[0])])
        if origin is tuple:
            if len(arguments) == 2 and arguments[1] is Ellipsis:
                return self._container(tuple, hint, [self._items(arguments[0])])
            parts = [self.checker(argument) for argument in arguments]

            def check_tuple(value: object, where: str) -> None:
                if not isinstance(value, tuple) or type(value) is not tuple or len(value) != len(parts):
                    raise IndexCheckError(f"{where}: a {type(value).__name__}, not a tuple of {len(parts)}")
                for item, part in zip(value, parts, strict=True):
                    part(item, where)

            return check_tuple
        raise IndexCheckError(f"cannot check {hint}")

    def _items(self, hint: Any) -> Callable[[Iterable[object], str], None]:
        """A check of many values of one annotation."""
        plain = _plain(hint)
        if plain is not None:
            allowed = frozenset(plain)

            def check_plain_items(values: Iterable[object], where: str) -> None:
                found = set(map(type, values))
                if not found <= allowed:
                    raise IndexCheckError(f"{where}: holds {_names(found - allowed)}, not {_names(allowed)}")

            return check_plain_items
        each = self.checker(hint)

        def check_items(values: Iterable[object], where: str) -> None:
            for value in values:
                each(value, where)

        return check_items

    def _container(
        self, kind: type, hint: Any, parts: list[Callable[[Iterable[object], str], None]]
    ) -> Checker:
        def check_container(value: object, where: str) -> None:
            if type(value) is not kind:
                raise IndexCheckError(f"{where}: a {type(value).__name__}, not a {kind.__name__}")
            key = (id(value), id(hint))
            if key in self._seen:
                return
            if kind is dict:
                parts[0](value.keys(), where)  # type: ignore[attr-defined]
                parts[1](value.values(), where)  # type: ignore[attr-defined]
            else:
                parts[0](value, where)  # type: ignore[arg-type]
            self._seen.add(key)

        return check_container

    def _dataclass(self, value: object, where: str, *, kind: type) -> None:
        _require(type(value) is kind, where, f"a {type(value).__name__}, not a {kind.__name__}")
        key = (id(value), id(kind))
        if key in self._seen:
            return
        state = getattr(value, "__dict__", None)
        _require(type(state) is dict, where, f"a {kind.__name__} without its fields")
        assert isinstance(state, dict)
        fields = self._fields(kind)
        _require(state.keys() == fields.keys(), where, f"a {kind.__name__} of other fields")
        for name, check in fields.items():
            check(state[name], f"{where}.{name.lstrip('_')}")
        self._seen.add(key)

    def _fields(self, kind: type) -> dict[str, Checker]:
        made = self._field_checkers.get(kind)
        if made is None:
            hints = typing.get_type_hints(kind)
            made = {field.name: self.checker(hints[field.name]) for field in dataclasses.fields(kind)}
            self._field_checkers[kind] = made
        return made


_SHAPES = _Shapes()
_SHAPES_LOCK = threading.Lock()


def _plain(hint: Any) -> tuple[type, ...] | None:
    """The types a plain annotation allows (`str`, `int | None`); None for any other annotation."""
    if hint is None or hint is type(None):
        return (type(None),)
    if isinstance(hint, type) and typing.get_origin(hint) is None and not dataclasses.is_dataclass(hint):
        return (hint,)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        kinds = [_plain(kind) for kind in typing.get_args(hint) if not _is_callable_hint(kind)]
        if all(kind is not None for kind in kinds):
            return tuple(single for kind in kinds if kind is not None for single in kind)
    return None


def _names(kinds: Iterable[type]) -> str:
    return " or ".join(sorted(kind.__name__ for kind in kinds))


def _is_callable_hint(hint: Any) -> bool:
    return typing.get_origin(hint) is Callable
