"""Analysis families: rules read from TOML, records classified, text filled with a record's own facts, and
lint's checks of the rules and text."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.families import (
    FamilyError,
    FamilyTable,
    RecordFacts,
    default_families,
    families_files,
    load_families,
    parse_families,
)
from bot.lint import ERROR, WARNING, family_findings
from bot.records import Catalog, Record, default_catalog
from tests.bot.test_lint import base, catalog_of

FAMILY = """
[[family]]
name = "{name}"
title = "Things"
documentation = "In {{crate}}, `{{function}}` did it: {{message}} ({{releases}}, op {{op}})."
solutions = ["One for {{crate}}.", "Two."]
exampleFix = "let x = 1;"
{extra}

[[family.rule]]
kinds = ["explicit-panic"]
messages = ['^Unsupported (?P<op>\\w+)']
"""


def table(*names: str, extra: str = "") -> FamilyTable:
    text = "".join(FAMILY.format(name=name, extra=extra) for name in names)
    return parse_families(text, "test.families.toml")


def record(**fields: object) -> Record:
    values = base(errorMessage="Unsupported gather for {:?}", messagePattern="Unsupported gather for (.+?)")
    values.update({"backgroundTag": "explicit-panic", **fields})
    return Record.model_validate(values)


FACTS = RecordFacts(
    message="Unsupported gather for {:?}",
    crate="burn-flex",
    file="crates/burn-flex/src/ops/reduce.rs",
    repo="tracel-ai/burn",
    function="gather",
    releases="burn-flex 0.21.0 to 0.22.0-pre.2",
)


def test_a_record_gets_its_family_text_filled_with_its_own_facts() -> None:
    families = table("things")
    [(family, groups)] = families.classify(record())
    assert family.name == "things" and groups == {"op": "gather"}
    analysis = families.analysis(record(), FACTS)
    assert analysis is not None and analysis.family == "things"
    assert analysis.documentation == (
        "In burn-flex, `gather` did it: Unsupported gather for {:?} "
        "(burn-flex 0.21.0 to 0.22.0-pre.2, op gather)."
    )
    assert analysis.solutions == ("One for burn-flex.", "Two.")


def test_no_family_text_when_a_fact_is_missing_or_the_rules_do_not_hold() -> None:
    families = table("things")
    assert families.analysis(record(), RecordFacts("m", "c", "f", "r", function=None, releases="x")) is None
    assert families.analysis(record(backgroundTag="expect-failed"), FACTS) is None
    assert families.analysis(record(errorMessage="Other", messagePattern="Other"), FACTS) is None


def test_a_record_in_two_families_gets_neither_and_lint_says_so() -> None:
    families = table("one", "two")
    assert families.analysis(record(), FACTS) is None
    catalog = catalog_of(
        base(
            errorMessage="Unsupported gather",
            messagePattern="Unsupported gather",
            backgroundTag="explicit-panic",
        )
    )
    overlaps = [f for f in family_findings(catalog, families) if f.check == "family-overlap"]
    assert [(f.severity, f.record_id) for f in overlaps] == [(ERROR, "r1")]
    assert "one, two" in overlaps[0].reason


def test_lint_flags_a_rule_that_takes_nothing_and_a_placeholder_no_record_can_fill() -> None:
    families = table("things", extra='commonSituations = "About {dtype} and {:?}."')
    catalog = catalog_of(base())  # an expect-failed-less baseline record: the rule takes nothing
    found = {(f.severity, f.check): f.reason for f in family_findings(catalog, families)}
    assert "rule 1 takes no record" in found[(WARNING, "family-unused")]
    placeholder = found[(ERROR, "family-placeholder")]
    assert "{dtype}" in placeholder and "{}" in placeholder


def test_lint_flags_a_family_example_that_is_not_rust() -> None:
    families = parse_families(
        FAMILY.format(name="things", extra="").replace(
            'exampleFix = "let x = 1;"', 'exampleFix = "let x = ;"'
        ),
        "f.toml",
    )
    assert [f.check for f in family_findings(Catalog(), families)].count("family-example") == 1


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[[family]]\ntitle = 'x'", "needs a name"),
        ('[[family]]\nname = "a"\ndocumentation = "d"\nsolutions = ["1", "2"]', r"no \[\[family\.rule\]\]"),
        (
            '[[family]]\nname = "a"\ndocumentation = "d"\nsolutions = ["1"]\n[[family.rule]]\nkinds = ["x"]',
            "two solutions",
        ),
        ('[[family]]\nname = "a"\n[[family.rule]]\npaths = ["("]', "not a regular expression"),
        ('[[family]]\nname = "a"\n[[family.rule]]\nfiles = ["x"]', "unknown keys files"),
        ("[[family", "not TOML"),
    ],
)
def test_a_bad_families_file_is_refused_with_its_problem(text: str, problem: str) -> None:
    with pytest.raises(FamilyError, match=problem):
        parse_families(text, "bad.families.toml")


def test_families_beside_a_catalog_file_replace_the_embedded_ones(tmp_path: Path) -> None:
    catalog = tmp_path / "ours.jsonl"
    catalog.write_text("", encoding="utf-8")
    assert families_files([catalog]) == []
    assert {f.name for f in load_families([catalog]).families} == {
        f.name for f in default_families().families
    }
    (tmp_path / "ours.families.toml").write_text(FAMILY.format(name="ours", extra=""), encoding="utf-8")
    assert [f.name for f in load_families([catalog]).families] == ["ours"]
    assert [f.name for f in load_families([tmp_path]).families] == ["ours"]


# -- the embedded families on the embedded catalog --


@pytest.fixture(scope="module")
def embedded() -> Catalog:
    return default_catalog()


def _family_of(catalog: Catalog, message: str, path_part: str = "") -> str | None:
    families = default_families()
    for candidate in catalog.records:
        if candidate.errorMessage == message and path_part in (candidate.filePath or ""):
            analysis = families.analysis_in(candidate, catalog.releases)
            return analysis.family if analysis else None
    raise AssertionError(f"no record {message!r}")


def test_the_embedded_families_lint_clean_on_the_embedded_catalog(embedded: Catalog) -> None:
    assert family_findings(embedded, default_families()) == []


def test_known_records_get_their_family(embedded: Catalog) -> None:
    assert _family_of(embedded, "worker reaper thread disconnected unexpectedly") == "follow-on"
    assert _family_of(embedded, "Should be able to send message to inference_server") == "follow-on"
    assert _family_of(embedded, "Expected Sign node") == "onnx-import"
    # A websocket that fails is the network (remote-connection), not a thread that died first.
    assert (
        _family_of(embedded, "Can send the message on the websocket.", "burn-remote") == "remote-connection"
    )


def test_a_written_analysis_wins_over_the_family(embedded: Catalog) -> None:
    families = default_families()
    analysed = [r for r in embedded.records if r.has_analysis]
    assert analysed and all(families.analysis_in(r, embedded.releases) is None for r in analysed)


def test_a_rule_whose_record_got_a_written_analysis_and_a_new_tag_is_still_used() -> None:
    families = table("things")
    written = base(
        errorMessage="Unsupported gather",
        messagePattern="Unsupported gather",
        backgroundTag="usage-error",  # retagged by its analysis: the rule's `explicit-panic` no longer holds
        documentation="Gather is not supported here.",
        solutions=["Use `select`.", "Upgrade to burn 0.19.0."],
        exampleFix="let x = 1;",
    )
    assert not [f for f in family_findings(catalog_of(written), families) if f.check == "family-unused"]
    bare = {**written, "documentation": None, "solutions": [], "exampleFix": None}
    assert [f.check for f in family_findings(catalog_of(bare), families)].count("family-unused") == 1


def _families_of(repo: str, path: str, message: str, kind: str) -> list[str]:
    """The embedded families whose rules hold for a bare record of this repository, file, message and tag."""
    values = base(errorMessage=message, messagePattern="x", filePath=path, repo=repo, backgroundTag=kind)
    return [family.name for family, _ in default_families().classify(Record.model_validate(values))]


BURN, CUBECL, NDARRAY = "tracel-ai/burn", "tracel-ai/cubecl", "rust-ndarray/ndarray"


@pytest.mark.parametrize(
    ("repo", "path", "message", "kind", "family"),
    [
        # a tensor asked for a data type of another kind; the bridge's kind check is not a DType's kind
        (
            BURN,
            "crates/burn-std/src/tensor/dtype.rs",
            "Expected float data type, got {value:?}",
            "explicit-panic",
            "dtype-kind-mismatch",
        ),
        (
            BURN,
            "crates/burn-tensor/src/tensor/api/base.rs",
            "Expected int dtype, got {dtype:?}",
            "explicit-panic",
            "dtype-kind-mismatch",
        ),
        (
            BURN,
            "crates/burn-tensor/src/tensor/api/extension.rs",
            "Expected kind {kind:?}, got dtype {dtype:?}",
            "explicit-panic",
            None,
        ),
        # the command-line converter's two arguments, not the same words elsewhere
        (
            BURN,
            "crates/burn-import/src/bin/onnx2burn.rs",
            "No output directory provided",
            "expect-failed",
            "onnx-converter-arguments",
        ),
        (
            BURN,
            "crates/burn-import/src/main.rs",
            "No input file provided",
            "expect-failed",
            "onnx-converter-arguments",
        ),
        (BURN, "crates/burn-import/src/lib.rs", "No input file provided", "expect-failed", None),
        # ndarray's counts converted to `A`; the conversion to `usize` is an argument check
        (
            NDARRAY,
            "src/numeric/impl_numeric.rs",
            "Converting axis length to `A` must not fail.",
            "expect-failed",
            "ndarray-count-conversion",
        ),
        (
            NDARRAY,
            "src/impl_constructors.rs",
            "Converting the length to `usize` must not fail",
            "expect-failed",
            "ndarray-argument",
        ),
        # burn-wgpu before cubecl: the async client's answer channel is a follow-on, the mapping a read
        (
            BURN,
            "crates/burn-wgpu/src/context/client.rs",
            "Unable to read buffer",
            "explicit-panic",
            "follow-on",
        ),
        (
            BURN,
            "crates/burn-wgpu/src/context/server.rs",
            "Unable to read buffer {:?}",
            "explicit-panic",
            "tensor-read-failed",
        ),
        (BURN, "crates/burn-wgpu/src/context/server.rs", "Unable sync", "explicit-panic", None),
        (
            CUBECL,
            "crates/cubecl-runtime/src/channel/mpsc.rs",
            "Can't connect to the server correctly {err:?}",
            "explicit-panic",
            "follow-on",
        ),
        (
            CUBECL,
            "crates/cubecl-common/src/device/handle/channel.rs",
            "Scoped task failed: Runner disconnected",
            "expect-failed",
            "follow-on",
        ),
        # a task that failed on the runner's own thread is not a runner that is gone
        (
            CUBECL,
            "crates/cubecl-common/src/device/handle/channel.rs",
            "Can't have an error when submitting a task",
            "expect-failed",
            None,
        ),
        (
            BURN,
            "crates/burn-wgpu/src/context/base.rs",
            "No adapter found for graphics API {:?}",
            "explicit-panic",
            "gpu-adapter-not-found",
        ),
        (
            BURN,
            "crates/burn-wgpu/src/context/client.rs",
            "No adapter found for graphics API {:?}",
            "explicit-panic",
            None,
        ),
        (
            BURN,
            "crates/burn-wgpu/src/compute/base.rs",
            "BURN_WGPU_MAX_TASKS should be a positive integer.",
            "expect-failed",
            "runtime-setting",
        ),
        (
            BURN,
            "crates/burn-wgpu/src/kernel/matmul/tiling2d/base.rs",
            "Workgroup size y must equal B_N / T_N",
            "assertion-failed",
            "kernel-library-refused",
        ),
        (
            BURN,
            "crates/burn-wgpu/src/kernel/matmul/tiling2d/base.rs",
            "Workgroup size y must equal B_N / T_N",
            "explicit-panic",
            None,
        ),
        (
            BURN,
            "crates/burn-wgpu/src/context/server.rs",
            "Tasks should be completed before submiting the current encoder.",
            "assertion-failed",
            "internal-assertion",
        ),
        (
            BURN,
            "crates/burn-std/src/tensor/dtype.rs",
            "Not a valid DType for tensors.",
            "explicit-panic",
            "internal-assertion",
        ),
        (
            BURN,
            "crates/burn-std/src/tensor/shape.rs",
            "Not a valid DType for tensors.",
            "explicit-panic",
            None,
        ),
        (
            BURN,
            "crates/burn-derive/src/shared/field.rs",
            "Only struct cna be derived",
            "explicit-panic",
            "burn-derive-usage",
        ),
        (
            BURN,
            "crates/burn-derive/src/module/codegen_enum.rs",
            "Can't parse record from a different variant",
            "explicit-panic",
            None,
        ),
        (
            BURN,
            "crates/burn-collective/src/global/node/worker.rs",
            "Can send the message on the websocket.",
            "expect-failed",
            "remote-connection",
        ),
        (
            BURN,
            "crates/burn-train/src/learner/base.rs",
            "Can send the message on the websocket.",
            "expect-failed",
            None,
        ),
        # a runtime or thread the operating system refused; a send on a closed channel is not one
        (
            BURN,
            "crates/burn-remote/src/server/builder.rs",
            "Failed to build the tokio runtime",
            "expect-failed",
            "async-runtime-start-failed",
        ),
        (
            BURN,
            "crates/burn-collective/src/local/server.rs",
            "Unable to initialize runtime",
            "expect-failed",
            "async-runtime-start-failed",
        ),
        (
            BURN,
            "crates/burn-remote/src/server/builder.rs",
            "Failed to build the tokio runtime",
            "explicit-panic",
            None,
        ),
        (
            CUBECL,
            "crates/cubecl-cpu/src/runtime.rs",
            "Can't get available parallelism on this platform",
            "expect-failed",
            "cpu-parallelism-unknown",
        ),
        (
            CUBECL,
            "crates/cubecl-wgpu/src/runtime.rs",
            "Can't get available parallelism on this platform",
            "expect-failed",
            None,
        ),
        # fusion before 0.13: burn-fusion's first graph, burn-wgpu's fused kernels; not its memory checks
        (
            BURN,
            "crates/burn-fusion/src/graph/execution.rs",
            "Can't wait while sync",
            "explicit-panic",
            "kernel-fusion",
        ),
        (
            BURN,
            "crates/burn-wgpu/src/fusion/elemwise/kernel.rs",
            "The grid must be a square",
            "assertion-mismatch",
            "kernel-fusion",
        ),
        (BURN, "crates/burn-fusion/src/stream/memory_checks.rs", "{msg}", "explicit-panic", None),
    ],
)
def test_the_pre_013_and_dtype_rules_take_their_records_and_leave_their_neighbours(
    repo: str, path: str, message: str, kind: str, family: str | None
) -> None:
    assert _families_of(repo, path, message, kind) == ([family] if family else [])
