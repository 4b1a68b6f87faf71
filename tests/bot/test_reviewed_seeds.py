"""The three Burn records of the embedded default with their analyses rewritten after review. Each fault the
reviewer found in the analyses as shipped (kept unchanged in tests/fixtures/seeds.jsonl) is gone: every test
checks the embedded record and, on the same property, that the shipped record fails it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import bot
from bot.api_table import ApiTable, load_api_table
from bot.example_check import parse_rust
from bot.lint import ERROR, analysis_is_suspect, lint_catalog
from bot.lookup import PanicLookup
from bot.records import Record, load_catalog

DATA = Path(bot.__file__).parent / "data" / "default_catalog.jsonl"
SEEDS = Path(__file__).resolve().parents[1] / "fixtures" / "seeds.jsonl"
AVG_POOL, DEFORM_DTYPE, DEFORM_BACKWARD = "8d1d2fa6df3880bd", "d59d5538758c7e08", "5c5da46720dbbf10"
_LINE_COMMENT = re.compile(r"//[^\n]*")


def records(path: Path) -> dict[str, Record]:
    catalog = load_catalog([path])
    assert catalog.errors == []
    return {record.id: record for record in catalog.records}


@pytest.fixture(scope="module")
def reviewed() -> dict[str, Record]:
    return records(DATA)


@pytest.fixture(scope="module")
def shipped() -> dict[str, Record]:
    return records(SEEDS)


@pytest.fixture(scope="module")
def api() -> ApiTable:
    table = load_api_table(["default"])
    assert table, "bot/data/ecosystem.api.jsonl.xz is missing"
    return table


def analysis_text(record: Record) -> str:
    return "\n".join(
        [
            record.documentation or "",
            record.triggerScenarios or "",
            record.commonSituations or "",
            *record.solutions,
            record.exampleFix or "",
            *record.preventionTips,
            *record.tags,
        ]
    )


def calls(code: str, name: str) -> list[list[str]]:
    """The arguments (as written, comments left out) of each call of the function `name` in `code`."""
    code = _LINE_COMMENT.sub("", code)
    found = []
    for match in re.finditer(rf"\b{re.escape(name)}\(", code):
        depth, start, args = 1, match.end(), []
        for at in range(match.end(), len(code)):
            char = code[at]
            if char in "([{<" and not (char == "<" and code[at - 1] == " "):
                depth += 1
            elif char in ")]}>" and not (char == ">" and code[at - 1] in "-="):
                depth -= 1
                if depth == 0:
                    args.append(code[start:at].strip())
                    break
            elif char == "," and depth == 1:
                args.append(code[start:at].strip())
                start = at + 1
        found.append([arg for arg in args if arg])
    return found


def test_the_deform_conv_backward_record_analyses_its_own_error(
    reviewed: dict[str, Record], shipped: dict[str, Record]
) -> None:
    assert analysis_is_suspect(shipped[DEFORM_BACKWARD])  # shipped: q_to_device on BackendRouter
    record = reviewed[DEFORM_BACKWARD]
    assert not analysis_is_suspect(record)
    text = analysis_text(record)
    assert "q_to_device" not in text and "BackendRouter" not in text and "burn-router" not in text
    assert "deform_conv2d_backward" in (record.documentation or "")
    # The card shows the analysis again instead of "under review".
    assert PanicLookup(load_catalog([DATA])).under_review == frozenset()
    assert PanicLookup(load_catalog([SEEDS])).under_review == frozenset({DEFORM_BACKWARD})


def test_the_flex_example_passes_weight_before_mask(
    reviewed: dict[str, Record], shipped: dict[str, Record]
) -> None:
    """deform_conv2d(x, offset, weight, mask, bias, options); the backend method adds output_grad before
    options."""

    def in_order(record: Record) -> bool:
        example = record.exampleFix or ""
        forward, backward = calls(example, "deform_conv2d"), calls(example, "deform_conv2d_backward")
        return (
            bool(forward)
            and all(len(args) == 6 and "weight" in args[2] and "mask" in args[3] for args in forward)
            and all(
                len(args) == 7 and "weight" in args[2] and ("mask" in args[3] or args[3] == "None")
                for args in backward
            )
        )

    assert not in_order(shipped[DEFORM_DTYPE])  # shipped: deform_conv2d(x, offset, mask, weight, ...)
    assert in_order(reviewed[DEFORM_DTYPE])


def test_the_flex_analysis_names_what_reaches_the_catch_all_arm(
    reviewed: dict[str, Record], shipped: dict[str, Record]
) -> None:
    """Not quantization (a quantized tensor's float primitive is dequantized first): an Int or Bool primitive
    passed as x (on Flex every primitive is a FlexTensor), or a Flex32 tensor."""

    def about_quantizing(record: Record) -> bool:
        return any("quantiz" in advice.lower() for advice in (*record.solutions, *record.preventionTips))

    assert about_quantizing(shipped[DEFORM_DTYPE])
    record = reviewed[DEFORM_DTYPE]
    assert not about_quantizing(record)
    scenarios = record.triggerScenarios or ""
    assert "Flex32" in scenarios and "IntTensor<Flex>" in scenarios and "FlexTensor" in scenarios
    assert "FlexTensor" not in (shipped[DEFORM_DTYPE].triggerScenarios or "")


def test_the_avg_pool_analysis_keeps_to_real_calls_and_no_max_pooling_detour(
    reviewed: dict[str, Record], shipped: dict[str, Record]
) -> None:
    def sound(record: Record) -> bool:
        example = record.exampleFix or ""
        # avg_pool2d(x, kernel_size, stride, padding, count_include_pad, ceil_mode); the backward adds grad.
        pools, backwards = calls(example, "avg_pool2d"), calls(example, "avg_pool2d_backward")
        return (
            "pool::" not in example
            and not calls(example, "max_pool2d")
            and bool(pools)
            and all(len(args) == 6 and not args[0].startswith("&") for args in pools)
            and all(len(args) == 7 for args in backwards)
            and not any("max_pool2d" in solution for solution in record.solutions[:1])
        )

    assert not sound(shipped[AVG_POOL])  # shipped: pool::avg_pool2d(&x, ...), "use max_pool2d instead"
    record = reviewed[AVG_POOL]
    assert sound(record)
    # Autodiff does differentiate avg_pool2d: its AvgPool2D step calls the inner backend's backward.
    assert "AvgPool2D" in (record.documentation or "")


def test_each_example_parses_as_rust(reviewed: dict[str, Record]) -> None:
    for record in reviewed.values():
        assert parse_rust(record.exampleFix or "")[2] is None, record.id


def test_lint_with_the_releases_api_finds_no_error_in_the_reviewed_records(api: ApiTable) -> None:
    """The shipped analyses have an error each (another error's analysis; weight and mask swapped; a `pool`
    module that does not exist); the reviewed ones none, against the releases that raise them."""
    shipped = {
        (f.record_id, f.check) for f in lint_catalog(load_catalog([SEEDS]), api) if f.severity == ERROR
    }
    assert {(DEFORM_BACKWARD, "analysis-mismatch"), (DEFORM_DTYPE, "example-order")} <= shipped
    assert (AVG_POOL, "example-path") in shipped
    reviewed = [f for f in lint_catalog(load_catalog([DATA]), api) if f.severity == ERROR]
    assert reviewed == []
