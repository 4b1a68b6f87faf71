"""The Rust runtime records (bot/data/rust_runtime.jsonl): well-formed, fully analysed, and each one the top
answer for real (captured) and constructed pastes of its panic, next to the Burn catalog."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.card import unfenced
from bot.harvest import record_id
from bot.lint import analysis_is_suspect
from bot.lookup import PanicLookup
from bot.matcher import Matcher
from bot.patterns import is_valid_pattern, match_record, record_key
from bot.records import Record, default_catalog, load_catalog, parse_catalog_text
from bot.rust_messages import pattern_from_message, split_format_string
from tests.support.pastes import shared_data_dir

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bot" / "data" / "rust_runtime.jsonl"
FIXTURES = ROOT / "tests" / "fixtures" / "rust_runtime"
DATASET_VERSION = "2026-12-01T00:00:00.000Z"

UNWRAP = "called `Result::unwrap()` on an `Err` value: "

# Fixture (file stem) -> slug of the record that must be the top match.
EXPECTED = {
    "add_overflow": "attempt-to-add-with-overflow",
    "alloc_failure": "memory-allocation-failed",
    "assert": "assertion-failed",
    "assert_eq": "assertion-left-right-failed",
    "assert_eq_message": "assertion-left-right-failed-with-message",
    "assert_eq_old": "assertion-failed-left-right-old-format",
    "assert_ne": "assertion-left-not-right-failed",
    "assert_ne_message": "assertion-left-not-right-failed-with-message",
    "btreemap_index": "map-index-no-entry-found-for-key",
    "call_error": "cubecl-call-error-unwrap",
    # The runner thread's panic is printed first: it is the answer, not the CallError unwrap after it.
    "call_error_root_cause": "index-out-of-bounds",
    "capacity_overflow": "capacity-overflow",
    "copy_from_slice": "copy-from-slice-length-mismatch",
    "copy_from_slice_unprefixed": "copy-from-slice-length-mismatch",
    "cubecl_buffer_too_big": "cubecl-buffer-too-big",
    "cubecl_cant_allocate_buffer": "cubecl-cant-allocate-buffer-of-size",
    "cubecl_cube_count_too_large": "cubecl-cube-count-too-large",
    "cudarc_driver_error": "cudarc-driver-error",
    "destructor_during_cleanup": "panic-in-a-destructor-during-cleanup",
    "div_by_zero": "attempt-to-divide-by-zero",
    "duration_add_overflow": "overflow-when-adding-durations",
    "duration_sub_overflow": "overflow-when-subtracting-durations",
    "hashmap_index": "map-index-no-entry-found-for-key",
    "index_out_of_bounds": "index-out-of-bounds",
    "index_out_of_bounds_old": "index-out-of-bounds",
    "instant_add_overflow": "overflow-when-adding-duration-to-instant",
    "io_not_found": "result-unwrap-io-not-found",
    "io_other": "result-unwrap-io-os-error",
    "io_out_of_memory": "result-unwrap-io-out-of-memory",
    "io_permission_denied": "result-unwrap-io-permission-denied",
    "mul_overflow": "attempt-to-multiply-with-overflow",
    "neg_overflow": "attempt-to-negate-with-overflow",
    "not_implemented": "not-implemented",
    "not_yet_implemented": "not-yet-implemented",
    "option_unwrap_none": "option-unwrap-none",
    "option_unwrap_none_old": "option-unwrap-none",
    "poison_error": "result-unwrap-poison-error",
    "poison_error_old": "result-unwrap-poison-error",
    # The worker's index out of bounds comes first: the root cause is the answer, not the PoisonError.
    "poison_error_root_cause": "index-out-of-bounds",
    "range_end": "range-end-index-out-of-range",
    "range_start": "range-start-index-out-of-range",
    "recv_error": "result-unwrap-recv-error",
    "refcell_borrow": "refcell-already-mutably-borrowed",
    "refcell_borrow_mut": "refcell-already-borrowed",
    "refcell_borrow_mut_old": "already-borrowed-borrowmuterror",
    "refcell_borrow_old": "already-mutably-borrowed-borrowerror",
    "rem_by_zero": "attempt-to-calculate-the-remainder-with-a-divisor-of-zero",
    "result_unwrap_err": "result-unwrap-err",
    "send_error": "result-unwrap-send-error",
    "shl_overflow": "attempt-to-shift-left-with-overflow",
    "shr_overflow": "attempt-to-shift-right-with-overflow",
    "slice_order": "slice-index-starts-but-ends",
    "stack_overflow": "thread-has-overflowed-its-stack",
    "str_char_boundary": "byte-index-not-char-boundary",
    "sub_overflow": "attempt-to-subtract-with-overflow",
    "sub_overflow_old": "attempt-to-subtract-with-overflow",
    "tch_cuda_backend": "tch-could-not-run-with-arguments-from-cuda-backend",
    "tch_cuda_oom": "tch-cuda-out-of-memory",
    "tch_torch_error": "tch-torch-error",
    "unreachable": "internal-error-entered-unreachable-code",
    "wasm_condvar_wait": "wasm-condvar-wait-not-supported",
    "wasm_recursive_mutex": "wasm-cannot-recursively-acquire-mutex",
    # The condvar panic trapped with the mutex held: the later lock failure follows from it.
    "wasm_recursive_mutex_root_cause": "wasm-condvar-wait-not-supported",
    "wgpu_error_in_operation": "wgpu-error-in-operation-validation-error",
    "wgpu_out_of_memory": "wgpu-error-out-of-memory",
    "wgpu_validation_error": "wgpu-error-validation-error",
}

WHOLE_MESSAGE = {"not-implemented", "not-yet-implemented", "internal-error-entered-unreachable-code"}

FOLLOW_ON = {
    "result-unwrap-poison-error",
    "result-unwrap-send-error",
    "result-unwrap-recv-error",
    "panic-in-a-destructor-during-cleanup",
    "cubecl-call-error-unwrap",
    "wasm-cannot-recursively-acquire-mutex",
}


@pytest.fixture(scope="module")
def records() -> list[Record]:
    catalog = parse_catalog_text(DATA.read_text(encoding="utf-8"), str(DATA))
    assert not catalog.errors, [str(e) for e in catalog.errors]
    assert not catalog.duplicates, [str(d) for d in catalog.duplicates]
    return catalog.records


@pytest.fixture(scope="module")
def by_slug(records: list[Record]) -> dict[str, Record]:
    slugs = {r.slug: r for r in records}
    assert len(slugs) == len(records), "slugs must be unique"
    return slugs  # type: ignore[return-value]


@pytest.fixture(scope="module")
def matcher(records: list[Record]) -> Matcher:
    burn = load_catalog([shared_data_dir() / "burn-panics.jsonl"])
    assert not burn.errors
    return Matcher([*records, *burn.records])


def test_every_line_is_in_the_seed_format() -> None:
    import json

    for number, line in enumerate(DATA.read_text(encoding="utf-8").splitlines(), start=1):
        value = json.loads(line)
        assert set(value) == {"record", "datasetVersion"}, number
        assert value["datasetVersion"] == DATASET_VERSION, number


def test_every_record_is_fully_analysed(records: list[Record]) -> None:
    for record in records:
        assert record.has_analysis, record.id
        for name in (
            "documentation",
            "triggerScenarios",
            "commonSituations",
            "exampleFix",
            "handlingStrategy",
        ):
            value = getattr(record, name)
            assert value, (record.id, name)
            assert name == "handlingStrategy" or len(value.strip()) >= 20, (record.id, name)
        assert 3 <= len(record.solutions) <= 5, record.id
        assert len(record.preventionTips) >= 3, record.id
        example, language = unfenced(record.exampleFix or "")
        mark = "#" if language == "sh" else "//"  # a shell example marks them as shell comments
        assert f"{mark} before" in example and f"{mark} after" in example, record.id
        assert not analysis_is_suspect(record), f"{record.id}: its card would hide the analysis"


def test_record_fields_follow_the_convention(records: list[Record]) -> None:
    for record in records:
        extra = record.model_extra or {}
        assert record.id == record_id(record.repo or "", "", record.errorMessage), record.id
        assert record.errorType == "panic"
        assert record.filePath is None and record.lineNumber is None and record.sourceCode is None
        assert record.backgroundTag == "rust-runtime-panic"
        assert {"rust", "rust-runtime"} <= set(record.tags), record.id
        assert len(record.tags) >= 3, record.id
        assert (record.githubUrl or "").startswith("https://"), record.id
        assert record.schemaVersion == 2
        assert extra.get("runtime") is True, record.id
        assert extra.get("followOn", False) is (record.slug in FOLLOW_ON), record.id
        if record.repo == "rust-lang/rust":
            assert record.errorClass is None or record.errorClass, record.id
        else:
            assert record.errorClass, f"{record.id}: a crate's error type must be named"


def test_patterns_compile_and_match_their_message(records: list[Record]) -> None:
    for record in records:
        pattern = record.messagePattern or ""
        derived = pattern_from_message(record.errorMessage)
        # The bare macro messages are anchored: unanchored, `not implemented` meets every
        # `... is not implemented ...` message (rustc's E0277 text, Burn's own stubs) and
        # `not implemented: <Burn message>` pastes without a location.
        expected = f"^{derived}$" if record.slug in WHOLE_MESSAGE else derived
        assert pattern == expected, record.id
        re.compile(pattern)
        assert is_valid_pattern(pattern) is None, record.id
        key, _ = record_key(pattern, record.errorMessage)
        filled = record.errorMessage.replace("{}", "X1")
        hit = match_record(key, filled)
        assert hit is not None and hit.mode == "full", record.id


@pytest.mark.parametrize(
    "text",
    [
        "not implemented: int_scatter_nd is not implemented for this backend",
        "error[E0277]: the trait bound `M<B>: Module<B>` is not satisfied\n"
        "  | the trait `Module<B>` is not implemented for `M<B>`",
        "internal error: entered unreachable code: Unsupported dtype",
        "not yet implemented: Not yet implemented for iteration",
    ],
)
def test_bare_macro_records_need_the_whole_message(text: str, by_slug: dict[str, Record]) -> None:
    for slug in WHOLE_MESSAGE:
        record = by_slug[slug]
        key, _ = record_key(record.messagePattern, record.errorMessage)
        assert match_record(key, text) is None, slug


def test_refined_records_carry_their_type(by_slug: dict[str, Record]) -> None:
    assert by_slug["result-unwrap-poison-error"].errorClass == "PoisonError"
    assert by_slug["result-unwrap-io-not-found"].errorClass == "std::io::Error"
    assert by_slug["tch-torch-error"].errorClass == "tch::TchError"
    assert "PoisonError" in (by_slug["result-unwrap-poison-error"].messagePattern or "")


def test_every_fixture_has_an_expectation() -> None:
    stems = {path.stem for path in FIXTURES.glob("*.txt")}
    assert stems == set(EXPECTED)


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_fixture_top_match(stem: str, matcher: Matcher, by_slug: dict[str, Record]) -> None:
    text = (FIXTURES / f"{stem}.txt").read_text(encoding="utf-8")
    result = matcher.lookup(text)
    assert result.status == "matched", stem
    assert result.matches[0].record.id == by_slug[EXPECTED[stem]].id, (stem, result.matches[0].record.slug)


@pytest.mark.parametrize(
    ("message", "refined", "generic"),
    [
        (
            UNWRAP + "PoisonError { .. }",
            "result-unwrap-poison-error",
            "result-unwrap-err",
        ),
        (
            UNWRAP + "SendError { .. }",
            "result-unwrap-send-error",
            "result-unwrap-err",
        ),
        (
            UNWRAP + "RecvError",
            "result-unwrap-recv-error",
            "result-unwrap-err",
        ),
        (
            UNWRAP + 'Os { code: 2, kind: NotFound, message: "No such file" }',
            "result-unwrap-io-not-found",
            "result-unwrap-io-os-error",
        ),
        (
            UNWRAP + 'Os { code: 13, kind: PermissionDenied, message: "x" }',
            "result-unwrap-io-permission-denied",
            "result-unwrap-io-os-error",
        ),
        (
            UNWRAP + "Torch(\"Could not run 'aten::add.Tensor' with arguments "
            "from the 'CUDA' backend. This could be because the operator doesn't exist\")",
            "tch-could-not-run-with-arguments-from-cuda-backend",
            "tch-torch-error",
        ),
        (
            UNWRAP + 'Torch("shape mismatch")',
            "tch-torch-error",
            "result-unwrap-err",
        ),
    ],
)
def test_refined_beats_generic(
    message: str, refined: str, generic: str, matcher: Matcher, by_slug: dict[str, Record]
) -> None:
    paste = f"thread 'main' panicked at src/main.rs:10:5:\n{message}\n"
    result = matcher.lookup(paste)
    ranked = [m.record.id for m in result.matches]
    assert ranked[0] == by_slug[refined].id
    assert by_slug[generic].id in ranked[1:]


@pytest.fixture(scope="module")
def default_service() -> PanicLookup:
    return PanicLookup(default_catalog())


@pytest.mark.parametrize(
    ("paste", "slug"),
    [
        (
            "thread 'main' (4242) panicked at src/main.rs:31:5:\n"
            "assertion `left == right` failed: my message\n  left: 3\n right: 4\n",
            "assertion-left-right-failed-with-message",
        ),
        (
            "thread 'main' panicked at src/main.rs:31:5:\n"
            "assertion `left == right` failed: batch sizes differ: 3 failed: 4\n  left: [3, 224, 224]\n"
            " right: [4, 224, 224]\n",
            "assertion-left-right-failed-with-message",
        ),
        (
            "thread 'main' panicked at src/main.rs:31:5:\n"
            "assertion `left != right` failed: dim must not be zero\n  left: 0\n right: 0\n",
            "assertion-left-not-right-failed-with-message",
        ),
        (
            "thread 'main' panicked at src/main.rs:7:26:\nno entry found for key\n",
            "map-index-no-entry-found-for-key",
        ),
        (
            "thread 'main' panicked at src/main.rs:9:14:\n"
            "called `Result::unwrap()` on an `Err` value: CallError\n",
            "cubecl-call-error-unwrap",
        ),
    ],
)
def test_user_code_panics_in_the_default_catalog(
    paste: str, slug: str, default_service: PanicLookup, by_slug: dict[str, Record]
) -> None:
    """With the whole embedded catalog (a harvested `{} failed: {}` among it), a user's own assertion with a
    message gets the runtime record of the assertion, not a crate's record that happens to fit its words."""
    result = default_service.lookup(paste)
    assert result.best is not None
    assert result.best.record.id == by_slug[slug].id, result.best.record.slug


def test_harvested_assertion_messages_keep_their_record(default_service: PanicLookup) -> None:
    """A Burn `assert_eq!` with a message, pasted at its site (or at a registry path and a line moved since),
    still gets a record of that message: the runtime record of an assertion with a message is only the fixed
    head of what Rust prints, never a whole match that an analysed record would win with."""
    import json

    burn = load_catalog([shared_data_dir() / "burn-panics.jsonl"])
    by_id = {record.id: record for record in burn.records}
    sites_path = shared_data_dir() / "burn-panics.sites.jsonl"
    sites = [json.loads(line) for line in sites_path.read_text(encoding="utf-8").splitlines()]
    checked = 0
    for site in sites:
        if site["kind"] not in ("assert_eq", "debug_assert_eq"):
            continue
        record = by_id[site["id"]]
        message = "7".join(split_format_string(record.errorMessage))
        crate, rest = site["filePath"].split("/", 2)[1:]
        registry = f"/home/dev/.cargo/registry/src/index.crates.io-0/{crate}-0.21.0/{rest}"
        for path, line in ((site["filePath"], site["lineNumber"]), (registry, site["lineNumber"] + 200)):
            paste = (
                f"thread 'main' panicked at {path}:{line}:9:\n"
                f"assertion `left == right` failed: {message}\n  left: 1\n right: 2\n"
            )
            best = default_service.lookup(paste).best
            assert best is not None and best.record.errorMessage == record.errorMessage, (
                site["filePath"],
                record.errorMessage,
                best.record.slug if best else None,
            )
            checked += 1
    assert checked >= 100


def _texts(record: Record) -> list[str]:
    return [
        record.documentation or "",
        record.triggerScenarios or "",
        record.commonSituations or "",
        *record.solutions,
        record.exampleFix or "",
        *record.preventionTips,
    ]


def test_cube_count_card_keeps_the_variant_alive(by_slug: dict[str, Record]) -> None:
    """CubeCountTooLarge moved from cubecl's reduce crate (0.4.0 to 0.9.0-pre.5) to cubek's, where it is
    still declared and raised (cubek v0.0.1 `reduce`): the card must not say that the variant is gone."""
    record = by_slug["cubecl-cube-count-too-large"]
    text = " ".join(_texts(record)).lower()
    for claim in ("no longer exist", "removed this variant", "variant was removed", "this variant is gone"):
        assert claim not in text, claim
    assert "cubek" in text
    assert "0.4.0" in (record.documentation or "") and "0.9.0-pre.5" in (record.documentation or "")


def test_driver_error_card_names_what_cubecl_reports_an_out_of_memory_as(by_slug: dict[str, Record]) -> None:
    """cubecl-cuda unwraps cudarc's allocation result up to 0.6 (Burn 0.14 to 0.18); from 0.7 it maps the
    driver's out-of-memory to IoError::BufferTooBig, from 0.11.0-pre.2 to IoError::OutOfMemory. No Burn
    release uses cubecl 0.7: Burn 0.18 is on cubecl 0.6."""
    record = by_slug["cudarc-driver-error"]
    documentation = record.documentation or ""
    for name in ("BufferTooBig", "OutOfMemory", "cubecl 0.7", "0.11.0-pre.2", "Burn 0.19"):
        assert name in documentation, name
    assert "cubecl 0.7 (Burn 0.18" not in " ".join(_texts(record))


def _f32_bytes(shape: str) -> int:
    size = 4
    for dim in shape.split(","):
        size *= int(dim)
    return size


def test_buffer_too_big_example_stays_under_the_cap_it_names(by_slug: dict[str, Record]) -> None:
    """The example's tensor is over the cap it states before the fix and every slice under it after."""
    example = by_slug["cubecl-buffer-too-big"].exampleFix or ""
    before, after = example.split("// after", 1)
    cap = re.search(r"about (\d+) GiB", before)
    assert cap is not None, "the example names the cap it works against"
    cap_bytes = int(cap.group(1)) * 2**30
    shape = r"\[(\d+(?:, \d+)*)\] f32"
    assert [_f32_bytes(s) for s in re.findall(shape, before)] and all(
        _f32_bytes(s) > cap_bytes for s in re.findall(shape, before)
    )
    sliced = re.findall(shape, after)
    assert sliced and all(_f32_bytes(s) < cap_bytes for s in sliced)
    stated = re.search(r"= (\d+) GiB", after)
    assert stated is not None and int(stated.group(1)) * 2**30 == _f32_bytes(sliced[0])


ARITHMETIC_AND_ASSERTIONS = (
    "attempt-to-subtract-with-overflow",
    "attempt-to-add-with-overflow",
    "attempt-to-multiply-with-overflow",
    "attempt-to-negate-with-overflow",
    "attempt-to-shift-left-with-overflow",
    "attempt-to-shift-right-with-overflow",
    "assertion-left-right-failed",
    "assertion-left-not-right-failed",
    "assertion-failed-left-right-old-format",
    "assertion-failed",
    "assertion-left-right-failed-with-message",
    "assertion-left-not-right-failed-with-message",
)


def test_overflow_and_assertion_cards_share_no_advice(by_slug: dict[str, Record]) -> None:
    """Each overflow and assertion card has its own solutions and prevention tips: none is written word for
    word into two of them (the shared ones fitted none, e.g. `usize` advice on the negate card)."""
    holders: dict[str, set[str]] = {}
    for slug in ARITHMETIC_AND_ASSERTIONS:
        record = by_slug[slug]
        for text in (*record.solutions, *record.preventionTips):
            holders.setdefault(" ".join(text.lower().split()).rstrip("."), set()).add(slug)
    shared = {text: slugs for text, slugs in holders.items() if len(slugs) > 1}
    assert not shared, shared


def test_negate_card_tips_are_about_negation(by_slug: dict[str, Record]) -> None:
    tips = by_slug["attempt-to-negate-with-overflow"].preventionTips
    joined = " ".join(tips)
    for name in ("MIN", "unsigned_abs", "wrapping_neg", "checked_neg"):
        assert name in joined, name
    assert "usize" not in joined
