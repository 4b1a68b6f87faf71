"""The analysis checker: every defect a reviewer found in the shipped analyses (issue 24) is flagged on the
text as it was shipped, against the releases' API harvested into bot/data/ecosystem.api.jsonl.xz."""

from __future__ import annotations

import gzip
import lzma
from pathlib import Path

import pytest

from bot.api_table import ApiTable, load_api_table
from bot.example_check import ExampleChecker, parse_rust, rust_blocks
from bot.lint import ERROR, WARNING, Finding, lint_catalog
from bot.records import Catalog, load_catalog

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SEEDS = FIXTURES / "seeds.jsonl"  # the upstream records, as shipped before the review
RUNTIME_BEFORE = FIXTURES / "runtime_before_review.jsonl"  # the runtime records the review found wrong

AVG_POOL, DEFORM_DTYPE, DEFORM_BACKWARD = "8d1d2fa6df3880bd", "d59d5538758c7e08", "5c5da46720dbbf10"
CUBE_COUNT = "a0ca2877a7d5641b"
ASSERTIONS = {"88ba9683746973d2", "1c52270bf66cc76d", "a9b01a59889dc6df"}
NEGATE = "98b6bac08a65a5a6"


@pytest.fixture(scope="module")
def api() -> ApiTable:
    table = load_api_table(["default"])
    assert table, "bot/data/ecosystem.api.jsonl.xz is missing"
    return table


@pytest.fixture(scope="module")
def before(api: ApiTable) -> list[Finding]:
    """Lint of the embedded data set with the analyses as they were shipped before the review."""
    catalog = load_catalog(["default", SEEDS, RUNTIME_BEFORE])
    return lint_catalog(catalog, api)


@pytest.fixture(scope="module")
def embedded() -> Catalog:
    return load_catalog(["default"])


def _of(findings: list[Finding], record_id: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in findings:
        if finding.record_id == record_id:
            found.setdefault(finding.check, []).append(finding.reason)
    return found


def test_avg_pool_before_review_is_flagged(before: list[Finding]) -> None:
    found = _of(before, AVG_POOL)
    # The example calls `pool::avg_pool2d` and `pool::max_pool2d`: no public `pool` module has them.
    assert any("`pool::avg_pool2d`" in reason for reason in found["example-path"])
    assert any("`pool::max_pool2d`" in reason for reason in found["example-path"])
    # "The autodiff backend does not implement the backward pass of avg_pool2d": burn-autodiff has it.
    assert any(
        "avg_pool2d" in reason and "crates/burn-autodiff/src/ops/module.rs" in reason
        for reason in found["claims-absence"]
    )


def test_deform_conv2d_argument_order_before_review_is_flagged(before: list[Finding]) -> None:
    reasons = _of(before, DEFORM_DTYPE)["example-order"]
    assert any("`mask` as argument 3" in reason and "weight: Tensor<B, 4>" in reason for reason in reasons)


def test_deform_conv_backward_carrying_another_analysis_is_flagged(before: list[Finding]) -> None:
    assert "analysis-mismatch" in _of(before, DEFORM_BACKWARD)


def test_cube_count_said_gone_is_flagged_with_where_it_still_is(before: list[Finding]) -> None:
    reasons = _of(before, CUBE_COUNT)["claims-absence"]
    assert any("CubeCountTooLarge" in reason and "cubek-reduce" in reason for reason in reasons)


def test_shared_assertion_solutions_and_overflow_tips_are_flagged(before: list[Finding]) -> None:
    for record_id in ASSERTIONS:
        assert "shared-text" in _of(before, record_id), record_id
    negate = _of(before, NEGATE)["shared-text"]
    assert any("prevention tip" in reason and "attempt to add with overflow" in reason for reason in negate)
    assert all(f.severity == WARNING for f in before if f.check == "shared-text")


def test_the_shipped_analyses_pass_the_checker(api: ApiTable, embedded: Catalog) -> None:
    code_checks = {"example-syntax", "example-path", "example-arity", "example-order", "claims-absence"}
    problems = [
        f
        for f in lint_catalog(embedded, api)
        if f.check
        in code_checks
        | {
            "analysis-mismatch",
            "shared-text",
            "example-fence",
            "few-solutions",
            "solution-vague",
            "doc-subject",
        }
    ]
    assert problems == []


# -- the checks one by one, on examples written for them --


def _check(api: ApiTable, example: str, repo: str = "tracel-ai/burn") -> list[tuple[str, str]]:
    checker = ExampleChecker(api)
    worlds = [w for w in checker.worlds(repo, "none", None) if w.ref in ("v0.19.0", "v0.20.0")]
    assert worlds
    return [(p.check, p.reason) for p in checker.check_example(example, worlds)]


def test_a_reference_where_a_tensor_is_taken_by_value(api: ApiTable) -> None:
    example = "let y = burn::tensor::module::avg_pool2d(&x, [2, 2], [2, 2], [0, 0], true);"
    [(check, reason)] = _check(api, example)
    assert check == "example-order" and "by value" in reason and "x: Tensor<B, 4>" in reason


def test_the_wrong_number_of_arguments(api: ApiTable) -> None:
    # max_pool2d takes six arguments (x, kernel_size, stride, padding, dilation, ceil_mode from 0.20).
    example = "use burn::tensor::module::max_pool2d;\nlet y = max_pool2d(x, [2, 2], [2, 2], [0, 0]);"
    [(check, reason)] = _check(api, example)
    assert check == "example-arity" and "4 arguments" in reason and "dilation" in reason


def test_a_right_call_and_right_paths_pass(api: ApiTable) -> None:
    example = (
        "use burn::tensor::module::avg_pool2d;\n"
        "use burn::tensor::{Tensor, backend::Backend};\n"
        "fn pool<B: Backend>(x: Tensor<B, 4>) -> Tensor<B, 4> {\n"
        "    let x = x.reshape([1, 1, 4, 4]);\n"
        "    avg_pool2d(x, [2, 2], [2, 2], [0, 0], true)\n"
        "}\n"
    )
    assert _check(api, example) == []


def test_a_path_that_names_nothing(api: ApiTable) -> None:
    [(check, reason)] = _check(api, "use burn::tensor::pool::avg_pool2d;")
    assert check == "example-path" and "burn::tensor::pool::avg_pool2d" in reason


def test_a_method_unknown_on_a_known_type(api: ApiTable) -> None:
    [(check, reason)] = _check(api, "let t = Tensor::no_such_method(1);")
    assert check == "example-path" and "`Tensor` has no `no_such_method`" in reason


def test_syntax_fences_and_fragments() -> None:
    # Statements alone are read as a function body; a shell fence is not Rust.
    assert parse_rust("let x = 1;\nlet y = x + 1;")[2] is None
    assert parse_rust("let x: Tensor<B, 3> = ...;")[2] is not None
    assert parse_rust("cargo test my_model_test")[2] is not None
    example = "```sh\ncargo test -- --nocapture\n```\n```rust\nlet x = 1;\n```\n"
    assert rust_blocks(example) == [(5, "let x = 1;\n")]


def test_claims_of_absence_are_read_where_the_name_follows_the_verb(api: ApiTable) -> None:
    checker = ExampleChecker(api)
    worlds = checker.worlds("tracel-ai/burn", "none", "crates/burn-autodiff/src/ops/module.rs")
    wrong = checker.check_claims(["Autodiff does not implement avg_pool2d_backward."], worlds)
    assert [p.check for p in wrong] == ["claims-absence"]
    right = checker.check_claims(
        ["Autodiff's avg_pool2d_backward panics when it runs on autodiff tensors."], worlds
    )
    assert right == []


def test_lint_without_an_api_table_checks_no_code(embedded: Catalog) -> None:
    assert not any(f.check.startswith("example-") for f in lint_catalog(load_catalog([SEEDS])))
    assert all(f.severity in (ERROR, WARNING) for f in lint_catalog(load_catalog([SEEDS])))


def test_shared_text_is_reported_across_errors_not_across_wordings_of_one() -> None:
    from tests.bot.test_lint import base, catalog_of

    tip = "Keep each borrow inside one small block and never across a callback."
    analysed = {"documentation": "d", "solutions": ["a", "b"], "exampleFix": "let x = 1;"}
    one = base(id="r1", errorMessage="RefCell already borrowed", messagePattern="RefCell already borrowed")
    two = base(
        id="r2",
        errorMessage="already borrowed: BorrowMutError",
        messagePattern="already borrowed: BorrowMutError",
    )
    other = base(
        id="r3", errorMessage="attempt to add with overflow", messagePattern="attempt to add with overflow"
    )
    same_class = {"errorClass": "std::cell::BorrowMutError", "preventionTips": [tip], **analysed}
    quiet = lint_catalog(catalog_of({**one, **same_class}, {**two, **same_class}))
    assert not [f for f in quiet if f.check == "shared-text"]
    loud = lint_catalog(catalog_of({**one, **same_class}, {**other, "preventionTips": [tip], **analysed}))
    assert {f.record_id for f in loud if f.check == "shared-text"} == {"r1", "r3"}


def test_a_config_s_derived_new_is_not_taken_for_another_crate_s_new(api: ApiTable) -> None:
    # burn-nn's `Conv2dConfig::new` is written by `#[derive(Config)]` (2 arguments here); onnx-ir has a
    # struct of the same name whose own `new` takes 7. The `use` says which one is meant.
    example = "use burn::nn::conv::Conv2dConfig;\nlet config = Conv2dConfig::new([3, 8], [3, 3]);"
    assert _check(api, example) == []
    # A method no type of that name has anywhere is still found out.
    wrong = "use burn::nn::conv::Conv2dConfig;\nlet config = Conv2dConfig::build_twice([3, 8]);"
    assert [check for check, _ in _check(api, wrong)] == ["example-path"]


@pytest.mark.parametrize("suffix", [".api.jsonl", ".api.jsonl.gz", ".api.jsonl.xz"])
def test_an_api_table_beside_a_catalog_is_read_plain_gzipped_or_xz(tmp_path: Path, suffix: str) -> None:
    embedded = lzma.decompress(
        (Path(__file__).resolve().parents[2] / "bot/data/ecosystem.api.jsonl.xz").read_bytes()
    )
    text = b"\n".join(embedded.splitlines()[:40]) + b"\n"
    data = {".api.jsonl": text, ".api.jsonl.gz": gzip.compress(text), ".api.jsonl.xz": lzma.compress(text)}
    catalog = tmp_path / "mine.jsonl"
    catalog.write_text("", encoding="utf-8")
    (tmp_path / f"mine{suffix}").write_bytes(data[suffix])
    table = load_api_table([catalog])
    assert table.refs() == ApiTable.from_lines(text.decode("utf-8").splitlines()).refs() != []
