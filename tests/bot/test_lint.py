"""Lint finds wrong records: it must flag the seed whose analysis is about another error, and stay quiet
on the clean ones."""

from __future__ import annotations

import json
from typing import Any

from bot.lint import ERROR, WARNING, analysis_is_suspect, lint_catalog
from bot.records import parse_catalog_text
from tests.support.catalogs import seeds_catalog


def catalog_of(*records: dict[str, Any], version: str = "2026-09-12T00:00:00.000Z"):
    text = "\n".join(json.dumps({"record": r, "datasetVersion": version}) for r in records)
    return parse_catalog_text(text, "test.jsonl")


def base(**fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "r1",
        "errorMessage": "Unsupported dtype {:?} for sum",
        "messagePattern": "Unsupported dtype (.+?) for sum",
        "filePath": "crates/burn-flex/src/ops/reduce.rs",
        "lineNumber": 40,
        "githubUrl": "https://github.com/tracel-ai/burn/blob/abc1234/crates/burn-flex/src/ops/reduce.rs#L40",
        "analyzedSha": "abc1234def",
        "analyzedAt": "2026-09-01T00:00:00.000Z",
    }
    record.update(fields)
    return record


def checks(catalog) -> set[tuple[str, str]]:
    return {(f.severity, f.check) for f in lint_catalog(catalog)}


def test_the_seeds_flag_only_the_mismatched_analysis() -> None:
    findings = lint_catalog(seeds_catalog())
    assert {(f.record_id, f.check) for f in findings} == {
        ("5c5da46720dbbf10", "analysis-mismatch"),
        ("5c5da46720dbbf10", "tags-mismatch"),
        # "Audit any cast/quantize ops ..." and "Downsample via strided conv2d or reshape+mean ...": advice
        # that names nothing a user could look up.
        ("d59d5538758c7e08", "solution-vague"),
        ("8d1d2fa6df3880bd", "solution-vague"),
    }
    mismatch = next(f for f in findings if f.check == "analysis-mismatch")
    assert mismatch.severity == ERROR
    assert "q_to_device" in mismatch.reason and "backendrouter" in mismatch.reason
    assert [analysis_is_suspect(r) for r in seeds_catalog().records] == [True, False, False]


def test_a_clean_baseline_record_has_no_finding() -> None:
    assert checks(catalog_of(base())) == set()


def test_pattern_problems() -> None:
    assert (ERROR, "pattern-invalid") in checks(catalog_of(base(messagePattern="Unsupported (dtype")))
    assert (ERROR, "pattern-mismatch") in checks(catalog_of(base(messagePattern="Something else (.+?)")))
    vague = base(errorMessage="{}: {}", messagePattern="(.+?): (.+?)")
    assert (WARNING, "pattern-vague") in checks(catalog_of(vague))
    assert checks(catalog_of(base(messagePattern=""))) == {(WARNING, "pattern-empty")}


def test_expect_messages_keep_their_braces_literal() -> None:
    expect = base(
        errorMessage="Wrong number (expected {D}, is {})",
        messagePattern="Wrong number \\(expected \\{D\\}, is \\{\\}\\)",
    )
    assert checks(catalog_of(expect)) == set()


def test_link_and_range_problems() -> None:
    found = checks(
        catalog_of(
            base(
                githubUrl="https://github.com/tracel-ai/burn/blob/fff9999/crates/burn-flex/src/other.rs#L1-L5",
                sourceCodeStart=100,
                sourceCodeEnd=120,
            )
        )
    )
    assert {(ERROR, "url-path"), (WARNING, "url-sha"), (ERROR, "url-line"), (ERROR, "source-range")} <= found


def test_analysed_records_need_solutions_and_a_fix_and_a_fresh_version() -> None:
    analysed = base(
        documentation="Unsupported dtype in sum of burn-flex reduce.", solutions=[], exampleFix=None
    )
    found = checks(catalog_of(analysed, version="2026-08-01T00:00:00.000Z"))
    assert {(WARNING, "no-solutions"), (WARNING, "no-example-fix"), (WARNING, "version-stale")} <= found


def test_duplicates_and_shared_messages() -> None:
    found = checks(catalog_of(base(), base(lineNumber=41), base(id="r2", lineNumber=90)))
    assert (WARNING, "duplicate-id") in found
    assert (WARNING, "same-message-same-file") in found


def test_the_shared_catalog_lints_clean() -> None:
    from bot.records import load_catalog
    from tests.support.pastes import shared_data_dir

    assert lint_catalog(load_catalog([shared_data_dir() / "burn-panics.jsonl"])) == []


def test_a_pattern_that_falls_back_to_regex_is_a_warning_and_an_escaped_literal_is_not() -> None:
    regex = base(
        messagePattern=r"^Unsupported dtype \w+ for sum$", errorMessage="Unsupported dtype {} for sum"
    )
    assert (WARNING, "pattern-regex") in checks(catalog_of(regex))
    # Python's re.escape writes `\ `: still literal text with a placeholder, matched with str.find.
    escaped = base(messagePattern=r"Unsupported\ dtype\ (.+?)\ for\ sum")
    assert checks(catalog_of(escaped)) == set()


def test_tag_links_and_documentation_links_are_valid_shapes() -> None:
    tag = "https://github.com/tracel-ai/burn/blob/v0.19.4/crates/burn-flex/src/ops/reduce.rs#L40"
    assert checks(catalog_of(base(githubUrl=tag))) == set()
    docs = "https://doc.rust-lang.org/std/primitive.usize.html#method.checked_add"
    assert checks(catalog_of(base(githubUrl=docs))) == set()
    tree = "https://github.com/tracel-ai/burn/tree/main/crates"
    assert checks(catalog_of(base(githubUrl=tree))) == {(WARNING, "url-shape")}
    assert checks(catalog_of(base(githubUrl="ftp://example.org/x"))) == {(WARNING, "url-shape")}


def test_an_analysed_record_hiding_its_bare_twin_is_no_finding() -> None:
    analysed = base(documentation="What it means.", solutions=["One.", "Two."])
    assert not [f for f in lint_catalog(catalog_of(analysed, base())) if f.check == "duplicate-id"]
    assert [f.check for f in lint_catalog(catalog_of(base(), base()))].count("duplicate-id") == 1


def test_an_analysis_gives_at_least_two_concrete_solutions() -> None:
    concrete = ["Call `Tensor::register_grad` before the forward pass.", "Upgrade to burn 0.19.0."]
    assert ("warning", "few-solutions") in checks(
        catalog_of(base(documentation="sum of an int tensor", solutions=concrete[:1], exampleFix="x();"))
    )
    found = lint_catalog(
        catalog_of(
            base(
                documentation="sum of an int tensor",
                solutions=[*concrete, "Check your code.", "Make sure the inputs are right."],
                exampleFix="x();",
            )
        )
    )
    vague = [f.reason for f in found if f.check == "solution-vague"]
    assert [reason.split(":")[0] for reason in vague] == [
        "solution 3 names no API, setting, command, file or version",
        "solution 4 names no API, setting, command, file or version",
    ]
    assert not [f for f in found if f.check == "few-solutions"]


def test_every_kind_of_concrete_anchor_counts() -> None:
    from bot.lint import _CONCRETE

    for solution in (
        "Use `with_grad`.",
        "Set RUST_BACKTRACE=1.",
        "Upgrade to 0.19.",
        "Run cargo update.",
        "Pass --release.",
        "Store weights in bf16.",
        "Switch to the Vulkan backend.",
        "Rename model.mpk.",
        "Call LearnerBuilder with a checkpointer.",
        "Read the load_record docs.",
        "Enable burn-wgpu.",
        "Replace the todo! with code.",
    ):
        assert _CONCRETE.search(solution), solution
    for solution in ("Check your code.", "Make sure the shapes are right.", "Report it upstream."):
        assert not _CONCRETE.search(solution), solution


def test_documentation_must_name_what_the_firing_condition_tests() -> None:
    from bot.lint import condition_subjects
    from bot.releases import ReleaseTable

    assert condition_subjects("lhs.dims() != rhs.dims()") == {"lhs", "rhs", "dims"}
    assert condition_subjects("tunable_indices.is_empty()") == {"tunable_indices"}

    def linted(documentation: str) -> set[str]:
        catalog = catalog_of(
            base(documentation=documentation, solutions=["Use `a`.", "Use `b`."], exampleFix="x();")
        )
        table = ReleaseTable()
        table.add_release_rows(
            [
                {
                    "repo": "tracel-ai/burn",
                    "ref": "v0.19.0",
                    "sha": "abc1234def",
                    "date": "2025-10-01T00:00:00Z",
                }
            ]
        )
        site = {"line": 40, "condition": "tunable_indices.is_empty()"}
        group = {"refs": ["v0.19.0"], "crate": "burn-flex", "sites": [site]}
        table.add_site_rows(
            [
                {
                    "id": "r1",
                    "repo": "tracel-ai/burn",
                    "filePath": "crates/burn-flex/src/ops/reduce.rs",
                    "releases": [group],
                }
            ]
        )
        catalog.releases = table
        return {f.check for f in lint_catalog(catalog)}

    assert "doc-subject" in linted("The reduction fails for this dtype.")
    assert "doc-subject" not in linted("The plan's next batch has no tunable indices left.")
    assert "doc-subject" not in linted("No candidate indices are left in the plan.")


def test_a_draft_is_linted_in_its_catalog_but_only_its_own_findings_are_reported() -> None:
    from bot.lint import lint_draft

    advice = "Cast the tensor to a float dtype before the reduction, as the kernel only sums floats."
    analysed = {"documentation": "Unsupported dtype in sum of burn-flex reduce.", "exampleFix": "let x = 1;"}
    context = catalog_of(
        base(
            id="other",
            errorMessage="Unsupported dtype {:?} for mean",
            messagePattern="",
            **analysed,
            solutions=[advice],
        ),
        base(id="same-site", lineNumber=90),
        base(id="broken", messagePattern="Unsupported (dtype"),  # not the draft's: never reported
        base(id="taken", errorMessage="Taken {}", messagePattern="Taken (.+?)", **analysed, solutions=["x"]),
    )
    draft = catalog_of(base(id="d1", **analysed, solutions=[advice])).entries[0]
    found = {(f.record_id, f.check) for f in lint_draft(draft, context)}
    assert found == {
        ("d1", "shared-text"),
        ("d1", "same-message-same-file"),
        # one solution, naming nothing a user can look up
        ("d1", "few-solutions"),
        ("d1", "solution-vague"),
    }
    taken = catalog_of(base(id="taken", errorMessage="Nope {}", messagePattern="Other (.+?)")).entries[0]
    existing = context.entries[3].record
    found = {(f.record_id, f.check) for f in lint_draft(taken, context, existing=existing)}
    assert found == {("taken", "pattern-mismatch"), ("taken", "duplicate-id")}


def test_an_analysis_naming_the_function_and_condition_of_its_site_is_not_about_another_error() -> None:
    from bot.lint import analysis_overlap, site_context
    from bot.releases import ReleaseTable

    record = catalog_of(
        base(
            documentation="`reduce_sum_dtype` checks `elem_kind` in `FlexReduce::run` before `launch_sum`.",
            solutions=["Use `a`.", "Use `b`."],
            exampleFix="x();",
        )
    ).records[0]
    table = ReleaseTable()
    table.add_release_rows(
        [{"repo": "tracel-ai/burn", "ref": "v0.19.0", "sha": "abc1234def", "date": "2025-10-01T00:00:00Z"}]
    )
    site = {
        "line": 40,
        "function": "reduce_sum_dtype",
        "impl": "FlexReduce",
        "condition": "elem_kind != Float",
    }
    row = {"refs": ["v0.19.0"], "crate": "burn-flex", "sites": [site]}
    table.add_site_rows(
        [
            {
                "id": "r1",
                "repo": "tracel-ai/burn",
                "filePath": "crates/burn-flex/src/ops/reduce.rs",
                "releases": [row],
            }
        ]
    )
    # Without the site, its code names are found nowhere in the message or the path.
    _, missing = analysis_overlap(record)
    assert {"reduce_sum_dtype", "elem_kind", "flexreduce"} <= missing
    _, missing = analysis_overlap(record, site_context(table, "r1"))
    assert missing == {"launch_sum"}


def test_variants_of_one_message_may_share_advice_but_two_messages_may_not() -> None:
    """`{D}` in one release and `{D1}` in another is one error: its variants' shared solution is not
    `shared-text`; the same solution in the record of another message is."""
    advice = "Call `unsqueeze_dim` on the tensor before the call, so that its rank is the one asked for."

    def variant(record_id: str, message: str, line: int) -> dict[str, Any]:
        return base(
            id=record_id,
            errorMessage=message,
            messagePattern="",
            lineNumber=line,
            documentation="The unsqueeze check compares the ranks.",
            solutions=[advice, "Upgrade `burn` to 0.18.0."],
            exampleFix="let x = 1;",
        )

    def shared(*records: dict[str, Any]) -> set[str]:
        return {f.record_id for f in lint_catalog(catalog_of(*records)) if f.check == "shared-text"}

    old = variant("old", "Can't unsqueeze smaller tensor, got dim {D2}, expected > {D1}", 10)
    new = variant("new", "Can't unsqueeze smaller tensor, got dim {d2}, expected > {d1}", 20)
    other = variant("other", "Can't squeeze tensor, got dim {D2}, expected < {D1}", 30)
    assert shared(old, new) == set()
    # One finding per error: the first record of the unsqueeze message, and the squeeze one.
    assert shared(old, new, other) == {"old", "other"}


def test_product_names_in_camel_case_are_prose_not_code_of_another_error() -> None:
    from bot.lint import analysis_overlap, code_names

    assert code_names("Export it from PyTorch with opset 17, or run it on WebGPU on GitHub CI") == set()
    assert code_names("`TensorData` and `into_data`") == {"tensordata", "into_data"}
    record = catalog_of(
        base(
            documentation="Re-export the model from PyTorch or TensorFlow; check it on GitHub, then WebGPU.",
            solutions=["Use `a`.", "Use `b`."],
            exampleFix="x();",
        )
    ).records[0]
    assert analysis_overlap(record) == (1.0, set())  # nothing named that the record could contradict
