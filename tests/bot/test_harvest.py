"""Harvesting panic sites from Rust source: every macro kind, the lexing traps, test code, and the records
the data set makes of them (checked against real records of `tests/fixtures/burn-panics.jsonl`)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.harvest import HarvestedSite, harvest_source, is_skipped_path, sites_to_records, slug
from bot.records import Record
from tests.support.pastes import shared_data_dir

REPO = "acme/burn"
SHA = "0123456789abcdef0123456789abcdef01234567"
VERSION = "2026-01-02T03:04:05.000Z"

OPS_PATH = "crates/burn-demo/src/ops.rs"
OPS = r"""//! Reshaping. A doc comment that shows `panic!("not a site")`.

/// Example: `unimplemented!("not a site either")`
/* a block /* nested panic!("nested comment") */ still a comment: todo!("no") */
pub fn reshape<'a>(shape: &'a [usize], dims: usize) -> Vec<usize> {
    let quote = '"';
    let fake = "panic!(\"inside a string\")";
    if shape.is_empty() {
        panic!("Can't reshape an empty shape.");
    }
    assert!(dims > 0);
    assert!(dims > 0, "dims must be positive, got {dims}");
    assert_eq!(
        shape.len(),
        dims,
        "Shape {:?} has {} dims, expected {}",
        shape,
        shape.len(),
        dims
    );
    assert_ne!(dims, 7, "Seven dims are {{reserved}}");
    debug_assert!(dims < 64, r"raw \n stays {dims}");
    debug_assert_eq!(dims % 2, 0, r#"needs "even" dims"#);
    debug_assert_ne!(dims, 3, "no \"three\" {}", 3);
    let first = shape
        .first()
        .expect("Shape needs {D} dims");
    unreachable!(
        "The reshape of {dims} dims \
         is never reached"
    )
}

pub fn later() {
    todo!("Sparse reshape");
}

pub fn never(value: Option<u8>) -> u8 {
    match value {
        Some(v) => v,
        None => unimplemented!("None values"),
    }
}

pub fn not_literal(msg: &str) {
    panic!("{}", msg);
    panic!(msg);
    panic!(concat!("con", "cat"));
    panic!();
    panic!("");
    let _ = Some(1).expect(msg);
    core::panic!["Qualified {}", 1];
}

#[cfg(test)]
mod tests {
    #[test]
    fn fails() {
        panic!("only in tests");
    }
}

pub fn again() {
    panic!("Can't reshape an empty shape.");
}
"""

# A Windows checkout: byte order mark and CRLF. The same message as ops.rs, in another file: another record.
LIB_PATH = "crates/burn-demo/src/lib.rs"
LIB = "\ufeff" + "\r\n".join(
    [
        "#[cfg(not(test))]",
        "pub fn check() {",
        '    panic!("Can\'t reshape an empty shape.");',
        "}",
        "",
        '#[cfg(all(test, feature = "std"))]',
        'fn helper() { panic!("test helper"); }',
        "",
        "#[tokio::test]",
        'async fn runs() { panic!("async test"); }',
        "",
    ]
)
BUILD_PATH = "crates/burn-demo/build.rs"
BUILD = 'fn main() {\n    std::env::var("OUT_DIR").expect("OUT_DIR is set by cargo");\n}\n'
TEST_ONLY_FILES = {
    "crates/burn-demo/tests/integration.rs": 'fn main() { panic!("integration"); }\n',
    "crates/burn-demo/benches/speed.rs": 'fn main() { panic!("bench"); }\n',
    "examples/demo/src/main.rs": 'fn main() { panic!("example"); }\n',
    "crates/burn-demo/src/testing.rs": '#![cfg(test)]\nfn helper() { panic!("whole file is tests"); }\n',
}
TREE = {OPS_PATH: OPS, LIB_PATH: LIB, BUILD_PATH: BUILD, **TEST_ONLY_FILES}


def harvest_tree(tree: dict[str, str]) -> list[HarvestedSite]:
    sites: list[HarvestedSite] = []
    for path in sorted(tree):
        sites.extend(harvest_source(tree[path], path, repo=REPO, sha=SHA))
    return sites


def expected(
    path: str, line: int, kind: str, message: str, pattern: str, slug: str, background: str
) -> dict[str, Any]:
    """The full record the data set would hold for a site: computed here without the harvester."""
    record_id = hashlib.sha256(f"{REPO}\n{path}\n{message}".encode()).hexdigest()[:16]
    return Record(
        id=record_id,
        repo=REPO,
        slug=slug,
        errorMessage=message,
        messagePattern=pattern,
        errorType="panic",
        severity="error",
        filePath=path,
        lineNumber=line,
        githubUrl=f"https://github.com/{REPO}/blob/{SHA}/{path}#L{line}",
        tags=("rust", "burn", "burn-demo", "demo", kind),
        backgroundTag=background,
        analyzedSha=SHA,
        analyzedAt=VERSION,
        contentChangedAt=VERSION,
    ).model_dump()


EXPECTED_RECORDS = [
    # build.rs sorts first; `std::env::var(..).expect` is a method call like any other.
    expected(BUILD_PATH, 2, "expect", "OUT_DIR is set by cargo", "OUT_DIR is set by cargo",
             "out-dir-is-set-by-cargo", "expect-failed"),
    # #[cfg(not(test))] is not test code; #[cfg(all(test, ..))] and #[tokio::test] are.
    expected(LIB_PATH, 3, "panic", "Can't reshape an empty shape.", r"Can't reshape an empty shape\.",
             "can-t-reshape-an-empty-shape", "explicit-panic"),
    # ops.rs: its second `Can't reshape an empty shape.` (line 64) is the same record, at line 9.
    expected(OPS_PATH, 9, "panic", "Can't reshape an empty shape.", r"Can't reshape an empty shape\.",
             "can-t-reshape-an-empty-shape", "explicit-panic"),
    expected(OPS_PATH, 12, "assert", "dims must be positive, got {dims}", r"dims must be positive, got (.+?)",
             "dims-must-be-positive-got", "assertion-failed"),
    expected(OPS_PATH, 13, "assert-eq", "Shape {:?} has {} dims, expected {}",
             "Shape (.+?) has (.+?) dims, expected (.+?)", "shape-has-dims-expected", "assertion-mismatch"),
    # `{{`/`}}` stay as written in the message; the pattern matches the printed `{reserved}`.
    expected(OPS_PATH, 21, "assert-ne", "Seven dims are {{reserved}}", r"Seven dims are \{reserved\}",
             "seven-dims-are-reserved", "assertion-mismatch"),
    # A raw string keeps its backslash.
    expected(OPS_PATH, 22, "debug-assert", r"raw \n stays {dims}", r"raw \\n stays (.+?)",
             "raw-n-stays", "assertion-failed"),
    expected(OPS_PATH, 23, "debug-assert-eq", 'needs "even" dims', 'needs "even" dims',
             "needs-even-dims", "assertion-mismatch"),
    expected(OPS_PATH, 24, "debug-assert-ne", 'no "three" {}', 'no "three" (.+?)',
             "no-three", "assertion-mismatch"),
    # `.expect` takes no format string: `{D}` is literal, escaped in the pattern and kept in the slug.
    expected(OPS_PATH, 27, "expect", "Shape needs {D} dims", r"Shape needs \{D\} dims",
             "shape-needs-d-dims", "expect-failed"),
    # A `\` at the end of a line joins it to the next, leading whitespace dropped.
    expected(OPS_PATH, 28, "unreachable", "The reshape of {dims} dims is never reached",
             "The reshape of (.+?) dims is never reached", "the-reshape-of-dims-is-never-reached",
             "unreachable-invariant"),
    expected(OPS_PATH, 35, "todo", "Sparse reshape", "Sparse reshape", "sparse-reshape",
             "unimplemented-api-stub"),
    expected(OPS_PATH, 41, "unimplemented", "None values", "None values", "none-values",
             "unimplemented-api-stub"),
    # `panic!("{}", msg)` has a literal format string; `panic!(msg)`, `concat!`, `panic!()` and `""` have
    # no message. With no word in the message, the slug is the kind.
    expected(OPS_PATH, 46, "panic", "{}", "(.+?)", "panic", "explicit-panic"),
    expected(OPS_PATH, 52, "panic", "Qualified {}", "Qualified (.+?)", "qualified", "explicit-panic"),
]  # fmt: skip


def test_fixture_tree_gives_exactly_the_expected_records() -> None:
    records = sites_to_records(harvest_tree(TREE), repo=REPO, sha=SHA, dataset_version=VERSION)
    assert [record.model_dump() for record in records] == EXPECTED_RECORDS


def test_sites_keep_every_call_with_its_column_and_function() -> None:
    sites = harvest_source(OPS, OPS_PATH, repo=REPO, sha=SHA)
    assert [(s.kind, s.line, s.column, s.function) for s in sites] == [
        ("panic", 9, 9, "reshape"),
        ("assert", 12, 5, "reshape"),
        ("assert_eq", 13, 5, "reshape"),
        ("assert_ne", 21, 5, "reshape"),
        ("debug_assert", 22, 5, "reshape"),
        ("debug_assert_eq", 23, 5, "reshape"),
        ("debug_assert_ne", 24, 5, "reshape"),
        ("expect", 27, 10, "reshape"),  # the column of `expect`, as Rust reports a #[track_caller] call
        ("unreachable", 28, 5, "reshape"),
        ("todo", 35, 5, "later"),
        ("unimplemented", 41, 17, "never"),
        ("panic", 46, 5, "not_literal"),
        ("panic", 52, 5, "not_literal"),  # `core::panic!` is located at its path
        ("panic", 64, 5, "again"),
    ]
    assert sites[0].github_url == f"https://github.com/{REPO}/blob/{SHA}/{OPS_PATH}#L9"
    assert sites[7].message_pattern == r"Shape needs \{D\} dims" and not sites[7].is_format


def test_bom_and_crlf_do_not_move_lines_or_columns() -> None:
    [site] = harvest_source(LIB, LIB_PATH, repo=REPO, sha=SHA)
    assert (site.line, site.column, site.message) == (3, 5, "Can't reshape an empty shape.")


def test_tests_benches_and_examples_folders_are_skipped_by_path() -> None:
    assert is_skipped_path("crates/burn-demo/tests/integration.rs")
    assert is_skipped_path("crates\\burn-demo\\benches\\speed.rs")
    assert is_skipped_path("examples/demo/src/main.rs")
    assert not is_skipped_path("crates/burn-demo/src/tests.rs")  # a file, not a folder, named tests
    assert not is_skipped_path("crates/burn-tests/src/lib.rs")
    for path, text in TEST_ONLY_FILES.items():
        assert harvest_source(text, path, repo=REPO, sha=SHA) == []


def messages(text: str) -> list[str]:
    return [site.message for site in harvest_source(text, "src/lib.rs", repo=REPO, sha=SHA)]


def test_lexing_traps() -> None:
    # A char literal holding a quote, lifetimes, byte strings and raw identifiers do not start strings.
    assert messages("fn f<'a>(x: &'a u8) { let q = '\"'; let e = '\\''; panic!(\"after chars\"); }") == [
        "after chars"
    ]
    assert messages('let b = b"panic!(\\"bytes\\")"; let r#type = 1; panic!("after bytes");') == [
        "after bytes"
    ]
    assert messages('let s = r##"a "# panic!("inside raw") "##; panic!("real");') == ["real"]
    # Escapes decode as Rust does; an unknown one stays as written.
    assert messages(r'panic!("tab\tnul\0hex\x41 uni\u{1F600}\u{00_e9} odd\q");') == [
        "tab\tnul\0hexA uni\U0001f600\u00e9 odd\\q"
    ]
    # Comments hide calls: line, block (nested), doc comments.
    commented = '// panic!("a")\n/* /* panic!("b") */ panic!("c") */\n/// panic!("d")\npanic!("e");'
    assert messages(commented) == ["e"]


def test_macro_arguments() -> None:
    # Delimiters of every kind, a trailing comma, a closure's commas and turbofish generics.
    assert messages('panic!["square"]; panic!{"curly"}; unreachable!("comma",);') == [
        "square",
        "curly",
        "comma",
    ]
    assert messages('assert!(xs.iter().all(|x| *x > 0), "all positive");') == ["all positive"]
    assert messages('assert!(xs.iter().fold(0, |a, b| a + b) > 0, "sum positive");') == ["sum positive"]
    assert messages('assert_eq!(parse::<A, B>("x"), "y");') == []  # two arguments: no message
    assert messages('assert_eq!(a, b, "{} vs {}", a, b);') == ["{} vs {}"]
    assert messages('assert!(a == "not a message");') == []
    # Only `.expect` with one literal argument; not `Option::expect(x, "..")`, not a formatted argument.
    assert messages('x.expect("one",); x.expect(&format!("{}", y)); Option::expect(x, "ufcs");') == ["one"]
    # Calls nested in another call's arguments count, in source order.
    assert messages('assert!(v.expect("inner") > 0, "outer");') == ["outer", "inner"]
    # Look-alikes: other macros and methods, a macro definition.
    assert messages('my_panic!("a"); x.panic("b"); expect("c"); macro_rules! panic { () => {} }') == []


def test_test_code_is_skipped() -> None:
    text = """
#[cfg(test)]
use crate::helpers::{a, b};
#[cfg(any(test, test))]
fn t1() { panic!("any test"); }
#[cfg(any(test, feature = "x"))]
fn t2() { panic!("any test or feature"); }
#[test]
#[should_panic(expected = "boom")]
fn t3<A, B>() { panic!("generic test"); }
fn run(v: u8) {
    match v {
        #[cfg(test)]
        0 => panic!("test arm"),
        _ => panic!("real arm"),
    }
}
mod inner {
    #![cfg(test)]
    fn t4() { panic!("inner attribute"); }
}
fn after() { panic!("after"); }
"""
    assert messages(text) == ["any test or feature", "real arm", "after"]


def test_unterminated_code_still_gives_what_is_complete() -> None:
    assert messages('panic!("done"); panic!("never closed') == ["done", "never closed"]
    assert messages('panic!("done"); /* never closed panic!("x")') == ["done"]
    assert messages('fn f() { assert!(a, "open call"') == ["open call"]


def test_slug_cuts_at_80_characters_on_a_word() -> None:
    long = "word " * 30
    assert len(slug(long, is_format=True)) <= 80
    assert slug(long, is_format=True).endswith("word")
    assert slug("{}", is_format=True, fallback="assert-eq") == "assert-eq"


def test_tags_of_a_repo_without_crates_folder() -> None:
    sites = harvest_source('fn main() { x.expect("config"); }', "src/main.rs", repo="acme/widget", sha=SHA)
    [record] = sites_to_records(sites, repo="acme/widget", sha=SHA, dataset_version=VERSION)
    assert record.tags == ("rust", "widget", "expect")


RUST_FRAGMENTS = st.sampled_from(
    [
        "panic!(", "assert_eq!(", "debug_assert!{", "todo![", "x.expect(", "core::panic!(", "\"msg {}\"",
        '"', "'", "'a", "'\"'", "r#\"", "\"#", "b\"", "\\", "\\\n", "/*", "*/", "//", "\n", "(", ")", "[",
        "]", "{", "}", ",", ";", "::<", ">", "->", "#[cfg(test)]", "#![cfg(test)]", "#[test]",
        "#[cfg(all(", "fn f", "mod m", "|a, b|", "\\u{", "\ufeff", "\r\n", " ",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_harvest_never_raises_on_any_text(text: str) -> None:
    for site in harvest_source(text, "crates/x/src/lib.rs", repo=REPO, sha=SHA):
        assert site.message.strip()
        assert 1 <= site.line <= text.count("\n") + 1 and site.column >= 1


@settings(max_examples=300, deadline=None)
@given(st.lists(RUST_FRAGMENTS | st.text(max_size=3), max_size=40).map("".join))
def test_harvest_never_raises_on_broken_rust(text: str) -> None:
    sites = harvest_source(text, "crates/x/src/lib.rs", repo=REPO, sha=SHA)
    records = sites_to_records(sites, repo=REPO, sha=SHA, dataset_version=VERSION)
    assert len(records) <= len(sites)
    for site in sites:
        assert 1 <= site.line <= text.count("\n") + 1 and site.column >= 1


# ---- Realism: lines as Burn writes them give the records of the data set ---------------------------------

BURN_REPO = "tracel-ai/burn"
BURN_SHA = "2c06be351006851d42fdb6df16b976f4a82d9747"
BURN_VERSION = "2026-08-21T20:08:45.000Z"


def place(blocks: list[tuple[int, list[str]]]) -> str:
    """Source with each block of lines starting at the given line, blank lines between."""
    lines: list[str] = []
    for start, block in blocks:
        assert len(lines) < start, "blocks overlap"
        lines.extend([""] * (start - 1 - len(lines)))
        lines.extend(block)
    return "\n".join(lines) + "\n"


UE8M0 = '"UE8M0 scales are not yet supported"'
DICE = '"Outputs and targets must have the same dimensions. Got {:?} and {:?}"'
RECOMPUTE = (
    '"Can\'t get state content of recompute state. A child has likely been accessed before its parents."'
)
# Burn's code around some sites, each block starting on the line of its `fn`, indented as in Burn so that
# the columns are Burn's too.
BURN_FILES: dict[str, list[tuple[int, list[str]]]] = {
    "crates/burn-autodiff/src/ops/module.rs": [
        (914, ["    fn deform_conv2d_backward() {",
               "        panic!(\"Can't differentiate deform conv 2d backward.\");",
               "    }"]),
    ],
    # A trailing space inside the message.
    "crates/burn-autodiff/src/checkpoint/base.rs": [
        (83, ["fn topological_sort() {",
              '                    panic!("Node {node_id:?} is not in the backward_states. ");',
              "}"]),
    ],
    # `.expect` with a literal `{D}`: escaped in the pattern.
    "crates/burn-ir/src/operation.rs": [
        (79, ["    fn as_fixed() {",
              '          let inputs = self.inputs.try_into().expect("Wrong number of inputs expected '
              '(expected {D}, is {}), check your implementation");',
              "    }"]),
    ],
    # A message spanning lines: its newlines and indentation are part of it.
    "crates/burn-tensor/src/tensor/api/base.rs": [
        (3642, ["fn try_into_data_sync_impl() {",
                " " * 26 + "try_read_sync(self.into_data_async()).expect(",
                '            "Failed to read tensor data synchronously.',
                "        This can happen on platforms that don't support blocking futures like WASM.",
                '        If possible, try using into_data_async instead.",',
                "        )",
                "}"]),
    ],
    "crates/burn-cubecl/src/kernel/reduce/base.rs": [
        (258, ["fn reduce_dim() {",
               "    debug_assert!(",
               "        !matches!(config, ReduceFnConfig::ArgMax) || output_dtype.is_some(),",
               '        "The `output_dtype` has to be `Some` when the `config` is `ArgMax`, `ArgMin`, '
               "`ArgTopK`, `Any` or `All`.",
               '        "',
               "    );",
               "}"]),
    ],
    "crates/burn-backend/src/backend/ops/modules/base.rs": [
        (530, ["    fn fold4d() {",
               "        assert_eq!(",
               "            channels_col % kernel_elems,",
               "            0,",
               '            "fold4d: input channels ({channels_col}) must be divisible by the kernel size '
               'product ({kernel_elems})"',
               "        );",
               "    }"]),
    ],
    "crates/burn-backend/src/backend/ops/modules/grid_sample.rs": [
        (32, ["fn float_grid_sample_2d_ref() {",
              '        _ => todo!("Default implementation for grid_sample_2d with {:?} unimplemented",',
              "            mode),",
              "}"]),
    ],
    # Two unreachable! sites with one message: one record, at the first.
    "crates/burn-autodiff/src/checkpoint/state.rs": [
        (29, ["fn to_state_content() {", f"                unreachable!({RECOMPUTE})", "}"]),
        (44, ["fn into_state_content() {", f"                unreachable!({RECOMPUTE})", "}"]),
    ],
    # One message, an `.expect` first and then two `unimplemented!`: the record is the expect's.
    "crates/burn-std/src/tensor/quantization.rs": [
        (365, ["fn scale_to_dtype() {", "    x", f"        .expect({UE8M0})", "}"]),
        (439, ["fn decode_scales() {", f"              Self::UE8M0 => unimplemented!({UE8M0}),", "}"]),
        (459, ["fn encode_scales() {", f"              Self::UE8M0 => unimplemented!({UE8M0}),", "}"]),
    ],
    # One message, an `assert!` and then a `panic!`: the record is the assertion's.
    "crates/burn-train/src/metric/vision/dice.rs": [
        (46, ["    fn new() {", "        assert!(", "            a == b,", f"            {DICE},",
              "            a,", "            b", "        );", "    }"]),
        (120, ["    fn update() {", "            panic!(", f"                {DICE},", "                a, b",
               "            );", "    }"]),
    ],
    # burn-tensor's checks: `TensorError::new(..)` with or without `.details(..)`, literal or `format!`.
    "crates/burn-tensor/src/tensor/api/check.rs": [
        (54, ["    pub(crate) fn into_scalar<const D: usize>(shape: &Shape) -> Self {",
              "        let mut check = Self::Ok;",
              "        if shape.num_elements() != 1 {",
              "            check = check.register(",
              '                TensorError::new("Only tensors with 1 element can be converted into scalar.")',
              "                    .details(format!(",
              '                        "Current tensor has {} elements",',
              "                        shape.num_elements()",
              "                    )),",
              "            );",
              "        }",
              "        check",
              "    }"]),
        (117, ["    pub(crate) fn narrow(dim: usize, start: usize, length: usize) -> Self {",
               "        let mut check = Self::Ok;",
               "        if start + length > size {",
               "            check = check.register(",
               '                "Narrow",',
               "                TensorError::new(format!(",
               '                    "Can\'t narrow at dimension {dim}, start + length exceeds the size of '
               'the tensor \\',
               '                     along this dimension (Size={})",',
               "                    size",
               "                )),",
               "            );",
               "        }",
               "        check",
               "    }"]),
        (146, ["    pub(crate) fn movedim_args_vec<const D: usize>(dims: &Vec<usize>) -> Self {",
               "        let mut check = Self::Ok;",
               "        for (i, &dim_i) in dims.iter().enumerate() {",
               "            for &dim_j in dims.iter().skip(i + 1) {",
               "                if dim_i == dim_j {",
               "                    check = check.register(",
               '                        TensorError::new("The given dimensions contain duplicates.")'
               '.details(',
               "                            format!(",
               '                            "The dimension {dim_i} is duplicated in the given dimensions '
               '{dims:?}.",',
               "                        ),",
               "                        ),",
               "                    );",
               "                }",
               "            }",
               "        }",
               "        check",
               "    }"]),
    ],
}  # fmt: skip


def test_burn_lines_give_the_data_set_records_and_sites() -> None:
    data = shared_data_dir()
    lines = {}
    with (data / "burn-panics.jsonl").open(encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)["record"]
            lines[record["id"]] = record
    with (data / "burn-panics.sites.jsonl").open(encoding="utf-8") as f:
        table = [json.loads(line) for line in f]
    for path, blocks in BURN_FILES.items():
        sites = harvest_source(place(blocks), path, repo=BURN_REPO, sha=BURN_SHA)
        records = sites_to_records(sites, repo=BURN_REPO, sha=BURN_SHA, dataset_version=BURN_VERSION)
        assert records, path
        for record in records:
            assert record.id in lines, (path, record.errorMessage)
            assert record.model_dump(mode="json") == Record.model_validate(lines[record.id]).model_dump(
                mode="json"
            )
        expected_sites = [
            (row["kind"], row["lineNumber"], row["column"], row["function"], row["isFormat"])
            for row in table
            if row["id"] in {r.id for r in records}
        ]
        assert [(s.kind, s.line, s.column, s.function, s.is_format) for s in sites] == expected_sites


def test_tensor_checks_take_literal_messages_and_details_only() -> None:
    source = "\n".join(
        [
            "fn checks() {",
            '    TensorError::new("Braces {kept} as written.");',
            "    TensorError::new(message);",
            '    TensorError::new("Known part.").details(format!("Shape {:?}", shape));',
            '    TensorError::new("Only the message.").details(explanation);',
            '    TensorError::new(format!("Rank {D} and {}", x),);',
            "}",
        ]
    )
    sites = harvest_source(source, "crates/burn-tensor/src/tensor/api/check.rs", repo="o/r", sha="s")
    assert [(site.line, site.message) for site in sites] == [
        (2, "Braces {{kept}} as written."),  # a format message: literal braces escaped
        (4, "Known part. Shape {:?}"),
        (5, "Only the message."),
        (6, "Rank {D} and {}"),
    ]
    assert {site.background_tag for site in sites} == {"tensor-check-failed"}


# ---- What the parse tree adds: impl types, conditions, `# Panics` docs, function spans -------------------

from bot.harvest import (  # noqa: E402 - the tests above import what they need first
    CONDITION_MAX_LENGTH,
    PANICS_DOC_MAX_LENGTH,
    FileHarvest,
    FunctionSpan,
    FunctionSpans,
    function_at,
    harvest_file,
)
from bot.harvest import harvest_tree as harvest_parsed  # noqa: E402 - `harvest_tree` above is the fixture's


def sites_of(text: str, path: str = "crates/x/src/lib.rs") -> list[HarvestedSite]:
    return list(harvest_parsed(text, path, repo=REPO, sha=SHA).sites)


def test_impl_type_is_the_self_type_without_generics_or_the_trait() -> None:
    text = """
impl<B: Backend> ModuleOps<Autodiff<B>> for AutodiffTensor<B> {
    fn conv(&self) { panic!("in a trait impl"); }
}
impl<T> Wrapper<T> {
    fn get(&self) -> T {
        fn helper() { todo!("nested fn of a method"); }
        unreachable!("inherent impl")
    }
}
impl Display for &crate::shape::Shape { fn fmt() { unimplemented!("reference to a path"); } }
trait Backend {
    fn sync() { panic!("default method"); }
    fn required();
}
fn free() { panic!("free function"); }
"""
    assert [(site.message, site.function, site.impl_type) for site in sites_of(text)] == [
        ("in a trait impl", "conv", "AutodiffTensor"),
        ("nested fn of a method", "helper", "Wrapper"),
        ("inherent impl", "get", "Wrapper"),
        ("reference to a path", "fmt", "Shape"),
        ("default method", "sync", "Backend"),
        ("free function", "free", None),
    ]


CONDITIONS = r"""
fn conditions(x: Option<u8>, v: &[u8], n: usize) {
    assert!(
        n > 0
            && v.len() < 10,
        "assert"
    );
    assert_eq!(v.len(), n, "assert_eq {}", n);
    debug_assert_ne!(v[0], 0, "debug_assert_ne");
    assert!(v.iter().fold(0, |a, b| a + b) > 0, "closure commas");
    if n > 3 {
        panic!("if");
    } else if n == 2 {
        unreachable!("else if");
    } else {
        todo!("else");
    }
    if let Some(value) = x {
        unimplemented!("if let {value}");
    }
    match x {
        Some(v) if v > 3 => panic!("guard"),
        Some(_) => {
            let y = 1;
            panic!("arm block");
        }
        None => {}
    }
    let r = v
        .first()
        .copied()
        .expect("parsed receiver");
    println!("{}", self.items.get(n)?.value::<u8>().expect("receiver in a macro"));
    if n > 9 {
        check = check.register(TensorError::new("tensor check"));
    }
    panic!("nothing around");
}
"""


def test_each_condition_form() -> None:
    assert [(site.message, site.condition) for site in sites_of(CONDITIONS)] == [
        # An assertion fires when what it asserts is false.
        ("assert", "not (n > 0 && v.len() < 10)"),
        ("assert_eq {}", "v.len() != n"),
        ("debug_assert_ne", "v[0] == 0"),
        ("closure commas", "not (v.iter().fold(0, |a, b| a + b) > 0)"),
        ("if", "n > 3"),
        ("else if", "n == 2"),  # the nearest `if`
        ("else", "not (n == 2)"),
        ("if let {value}", "let Some(value) = x"),
        ("guard", "x is Some(v) if v > 3"),
        ("arm block", "x is Some(_)"),
        ("parsed receiver", "v.first().copied() is Err/None"),
        ("receiver in a macro", "self.items.get(n)?.value::<u8>() is Err/None"),
        ("tensor check", "n > 9"),
        ("nothing around", None),
    ]


MATCH_ARMS = r"""
fn arms(x: Tensor, flag: bool, kind: Kind) {
    match x.dtype() {
        DType::F32 | DType::F64 => one(),
        // half precision
        DType::F16 => two(),
        dtype => panic!("unsupported dtype {dtype:?}"),
    }
    match kind {
        Kind::A => panic!("explicit arm"),
        Kind::B | Kind::C => unreachable!("or arm"),
        #[cfg(feature = "d")]
        Kind::D => {}
        other if other.is_big() => panic!("guarded binding"),
        ref rest @ _ => unimplemented!("bound catch-all"),
    }
    match kind {
        Kind::A => {}
        n if n.len() > 2 => {}
        _ => todo!("after a guard"),
    }
    if flag {
        match flag {
            _ => panic!("only arm"),
        }
    }
    if flag {
        panic!("bare if");
    } else {
        panic!("bare else");
    }
    assert!(flag, "bare assert");
    assert!(!flag, "negated assert");
    match (a, b) {
        (Some(x), None) => {}
        (lhs, _) => panic!("tuple of bindings"),
    }
    assert!(!v.is_empty(), "negated call");
    if !v[0].is_empty() {
    } else {
        panic!("negated call else");
    }
    assert!(!a || b.f(c), "or assert");
}
"""


def test_a_match_arm_fires_when_its_scrutinee_is_its_pattern_never_a_bare_name() -> None:
    assert [(site.message, site.condition) for site in sites_of(MATCH_ARMS)] == [
        ("unsupported dtype {dtype:?}", "x.dtype() is not one of DType::F32, DType::F64, DType::F16"),
        ("explicit arm", "kind is Kind::A"),
        ("or arm", "kind is one of Kind::B, Kind::C"),
        ("guarded binding", "kind is other if other.is_big()"),
        ("bound catch-all", "kind is not one of Kind::A, Kind::B, Kind::C, Kind::D, other if other.is_big()"),
        ("after a guard", "kind is not one of Kind::A, n if n.len() > 2"),
        ("only arm", "flag is true"),  # a catch-all alone says nothing: the `if` around it does
        ("bare if", "flag is true"),
        ("bare else", "flag is false"),
        ("bare assert", "flag is false"),
        ("negated assert", "flag is true"),
        ("tuple of bindings", "(a, b) is not one of (Some(x), None)"),
        ("negated call", "v.is_empty()"),
        ("negated call else", "v[0].is_empty()"),
        ("or assert", "not (!a || b.f(c))"),
    ]


def test_no_condition_is_a_bare_name() -> None:
    for site in sites_of(CONDITIONS) + sites_of(MATCH_ARMS):
        assert site.condition is None or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", site.condition), site


def test_a_condition_is_one_line_cut_at_its_limit() -> None:
    long = " && ".join(f"value_{i} > {i}" for i in range(40))
    [site] = sites_of(f'fn f() {{ if {long} {{ panic!("long"); }} }}')
    assert site.condition is not None and len(site.condition) == CONDITION_MAX_LENGTH
    assert site.condition.endswith("…") and site.condition.startswith("value_0 > 0 && value_1 > 1")
    # The condition of an `if` outside the function does not reach a nested one.
    [inner] = sites_of('fn f() { if a { fn g() { panic!("inner fn"); } } }')
    assert inner.condition is None


PANICS_DOCS = """
/// Reshapes the tensor.
///
/// # Panics
///
/// If the new shape has another number of elements,
/// or if `dims` is empty.
///
/// ```
/// # let t = 1;
/// reshape(t);
/// ```
///
/// # Example
/// Not part of the section.
#[inline]
pub fn reshape() { panic!("reshape"); }

/// No panics section here.
fn plain() { panic!("plain"); }

/**
 * # Panics
 * In a block doc comment.
 */
fn block() { panic!("block"); }

/// ## Panics
/// Under a second-level heading. # Not a heading
// A plain comment between doc and function.
fn second_level() { panic!("second level"); }
"""


def test_panics_doc_is_the_panics_section_as_one_paragraph() -> None:
    assert [(site.function, site.panics_doc) for site in sites_of(PANICS_DOCS)] == [
        ("reshape", "If the new shape has another number of elements, or if `dims` is empty."),
        ("plain", None),
        ("block", "In a block doc comment."),
        ("second_level", "Under a second-level heading. # Not a heading"),
    ]
    long = "/// # Panics\n" + "/// Always panics loudly.\n" * 60 + 'fn f() { panic!("x"); }\n'
    [site] = sites_of(long)
    assert site.panics_doc is not None and len(site.panics_doc) == PANICS_DOC_MAX_LENGTH
    assert site.panics_doc.endswith("…")


SPANS = """fn top() {
    fn nested() {
        let x = 1;
    }
    let closure = || {
        panic!("closure in top");
    };
}

impl Thing {
    pub(crate) async fn method(&self) -> u8 {
        1
    }
}

trait Shape {
    fn required(&self);
    fn provided(&self) { }
}

#[cfg(test)]
mod tests {
    fn helper() {}
    #[test]
    fn case() {}
}

#[test]
fn lone_test() {}

macro_rules! make {
    ($t:ty) => {
        impl Make for $t {
            fn made() -> u8 { 0 }
            fn $name() {}
        }
    };
}
fn last() {} fn same_line() {}
"""


def test_function_spans_cover_every_fn_with_a_body_outside_test_code() -> None:
    harvest = harvest_parsed(SPANS, "crates/x/src/lib.rs", repo=REPO, sha=SHA)
    assert isinstance(harvest, FileHarvest)
    assert list(harvest.functions) == [
        FunctionSpan("top", None, 1, 8),
        FunctionSpan("nested", None, 2, 4),
        FunctionSpan("method", "Thing", 11, 13),
        FunctionSpan("provided", "Shape", 18, 18),
        FunctionSpan("made", None, 34, 34),  # among a macro's tokens; `fn $name` names nothing
        FunctionSpan("last", None, 39, 39),
        FunctionSpan("same_line", None, 39, 39),
    ]
    [site] = harvest.sites
    assert (site.function, site.line) == ("top", 6)
    assert harvest_file(SPANS, "crates/x/src/lib.rs", repo=REPO, sha=SHA) == (list(harvest.sites), [])


def test_function_at_finds_the_innermost_function_of_a_line() -> None:
    functions = harvest_parsed(SPANS, "crates/x/src/lib.rs", repo=REPO, sha=SHA).functions
    names = {line: getattr(function_at(functions, line), "name", None) for line in range(42)}
    assert [names[line] for line in (0, 1, 2, 4, 5, 8, 9, 11, 12, 17, 18, 22, 34, 35, 39, 41)] == [
        None, "top", "nested", "nested", "top", "top", None, "method", "method", None, "provided", None,
        "made", None, "same_line", None,
    ]  # fmt: skip
    # Any sequence works; a FunctionSpans keeps its index between calls.
    assert function_at(list(functions), 3) == function_at(functions, 3) == FunctionSpan("nested", None, 2, 4)
    assert function_at([], 3) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 60), st.integers(0, 30)), max_size=30), st.integers(0, 100))
def test_function_at_is_the_latest_starting_span_holding_the_line(
    spans: list[tuple[int, int]], line: int
) -> None:
    functions = FunctionSpans(
        sorted(
            (FunctionSpan(f"f{i}", None, start, start + length) for i, (start, length) in enumerate(spans)),
            key=lambda span: (span.start_line, -span.end_line),
        )
    )
    holding = [span for span in functions if span.start_line <= line <= span.end_line]
    expected = max(holding, key=lambda span: (span.start_line, -span.end_line), default=None)
    found = function_at(functions, line)
    assert (
        (found.start_line, found.end_line) == (expected.start_line, expected.end_line)
        if expected
        else (found is None)
    )


def test_function_at_is_a_bisect_on_thousands_of_spans() -> None:
    import time

    functions = FunctionSpans(
        span
        for i in range(5000)
        for span in (
            FunctionSpan(f"outer{i}", "T", i * 10 + 1, i * 10 + 8),
            FunctionSpan(f"inner{i}", "T", i * 10 + 3, i * 10 + 4),
        )
    )
    function_at(functions, 1)  # builds the index
    started = time.perf_counter()
    found = [function_at(functions, line) for line in range(1, 50_001)]
    assert time.perf_counter() - started < 1.0
    assert [getattr(f, "name", None) for f in found[:11]] == [
        "outer0", "outer0", "inner0", "inner0", "outer0", "outer0", "outer0", "outer0", None, None, "outer1",
    ]  # fmt: skip


def test_code_the_grammar_cannot_read_still_gives_its_sites() -> None:
    # tree-sitter-rust rejects attributes on a struct pattern's fields; its error recovery then reads the
    # quote of `"b"` as the start of a string that swallows the `expect` below. The token view does not.
    text = """fn quantize(scheme: Scheme) -> u8 {
    match scheme {
        Scheme {
            #[cfg(not(feature = "b"))]
            value: 1,
            #[cfg(feature = "b")]
            value: 2,
            ..
        } => {
            let g = if global { Some(global.expect("two-level scheme")) } else { None };
            0
        }
        _ => unimplemented!("not supported"),
    }
}

#[cfg(test)]
mod tests {
    fn t() { panic!("test code"); }
}
"""
    harvest = harvest_parsed(text, "crates/x/src/lib.rs", repo=REPO, sha=SHA)
    assert [(s.kind, s.message, s.line, s.column, s.function, s.condition) for s in harvest.sites] == [
        ("expect", "two-level scheme", 10, 45, "quantize", "global is Err/None"),
        # The arms before it are misread: a catch-all's condition cannot be told.
        ("unimplemented", "not supported", 13, 14, "quantize", None),
    ]
    assert [function.name for function in harvest.functions] == ["quantize"]


def test_only_facts_are_kept() -> None:
    for site in sites_of(CONDITIONS) + sites_of(PANICS_DOCS):
        for text in (site.condition, site.panics_doc):
            assert text is None or ("\n" not in text and len(text) <= PANICS_DOC_MAX_LENGTH)


def mutations(text: str) -> st.SearchStrategy[str]:
    """`text` with a few characters deleted, duplicated or replaced by Rust's punctuation."""
    edit = st.tuples(
        st.integers(0, len(text)),
        st.integers(0, 8),
        st.sampled_from(["", '"', "{", "}", "(", ")", "#[", "'", "/*"]),
    )

    def apply(edits: list[tuple[int, int, str]]) -> str:
        result = text
        for at, length, insert in edits:
            position = min(at, len(result))
            result = result[:position] + insert + result[position + length :]
        return result

    return st.lists(edit, min_size=1, max_size=6).map(apply)


REAL_SNIPPETS = [
    OPS,
    LIB,
    CONDITIONS,
    PANICS_DOCS,
    SPANS,
    place(BURN_FILES["crates/burn-tensor/src/tensor/api/check.rs"]),
]


def check_harvest(text: str) -> None:
    harvest = harvest_parsed(text, "crates/x/src/lib.rs", repo=REPO, sha=SHA)
    lines = text.count("\n") + 1
    for site in harvest.sites:
        assert site.message.strip() and 1 <= site.line <= lines and site.column >= 1
        assert site.condition is None or len(site.condition) <= CONDITION_MAX_LENGTH
    assert [site.line for site in harvest.sites] == sorted(site.line for site in harvest.sites)
    starts = [function.start_line for function in harvest.functions]
    assert starts == sorted(starts)
    for function in harvest.functions:
        assert 1 <= function.start_line <= function.end_line <= lines
        assert function_at(harvest.functions, function.start_line) is not None
    for site in harvest.sites:
        # A site's function holds its line.
        assert site.function is None or any(
            f.name == site.function and f.start_line <= site.line <= f.end_line for f in harvest.functions
        )


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_harvest_tree_never_raises_on_any_text(text: str) -> None:
    check_harvest(text)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(REAL_SNIPPETS).flatmap(mutations))
def test_harvest_tree_never_raises_on_mutated_rust(text: str) -> None:
    check_harvest(text)


def test_out_of_line_test_modules_and_test_code_among_a_macros_tokens() -> None:
    text = """
#[cfg(test)]
mod tests;
#[cfg(all(test, feature = "std"))]
pub(crate) mod testing;
#[cfg(test)]
mod inline {
    #[cfg(test)]
    mod deeper;
}
macro_rules! suite {
    () => {
        #[cfg(test)]
        mod generated;
        #[test]
        fn generated_test() { panic!("generated test"); }
        fn generated_helper() { panic!("generated helper"); }
    };
}
"""
    harvest = harvest_parsed(text, "crates/x/src/ops/mod.rs", repo=REPO, sha=SHA)
    assert harvest.test_modules == (
        "crates/x/src/ops/tests.rs",
        "crates/x/src/ops/tests/",
        "crates/x/src/ops/testing.rs",
        "crates/x/src/ops/testing/",
        "crates/x/src/ops/generated.rs",
        "crates/x/src/ops/generated/",
    )  # `deeper` is declared inside test code: nothing to add
    assert [(site.message, site.function) for site in harvest.sites] == [
        ("generated helper", "generated_helper")
    ]
    assert [function.name for function in harvest.functions] == ["generated_helper"]


CRATE_ASSERTS = r"""
#[cfg(debug_assertions)]
macro_rules! ndassert {
    ($e:expr, $($t:tt)*) => { assert!($e, $($t)*) };
}

#[track_caller]
fn to_abs_slice(axis_len: usize, slice: Slice) -> (usize, usize, isize)
{
    let Slice { start, end, step } = slice;
    ndassert!(
        end <= axis_len,
        "Slice end {} is past end of axis of length {}",
        end,
        axis_len,
    );
    ndassert!(step != 0, "Slice stride must not be zero");
    ndassert!(step > 0);
    (start, end, step)
}

fn strict(value: Option<u8>) -> u8 {
    strict_assert!(value.is_some(), "Called strict_unwrap_unchecked on None");
    strict_assert!(value.is_some());
    value.unwrap_or(0)
}

fn cast(size_in: usize, size_out: usize, scalar: bool) {
    if !scalar {
        expand_error!("Cast element count must match if input is not scalar");
    }
    expand_assert!(size_in == size_out, "Reinterpret type sizes must match");
}
"""


def test_crate_assert_macros_are_sites_like_assert() -> None:
    """ndarray's `ndassert!` and wgpu's `strict_assert!` forward to `assert!`: message at the same argument,
    the condition their first; cubecl's kernel expansion errors print a fixed prefix before the message."""
    sites = sites_of(CRATE_ASSERTS, "src/dimension/mod.rs")
    prefix = "An error occurred during kernel expansion:\n"
    slice_end = "Slice end {} is past end of axis of length {}"
    cast = prefix + "Cast element count must match if input is not scalar"
    found = [(s.kind, s.message, s.line, s.column, s.function, s.condition) for s in sites]
    assert found == [
        ("ndassert", slice_end, 11, 5, "to_abs_slice", "not (end <= axis_len)"),
        ("ndassert", "Slice stride must not be zero", 17, 5, "to_abs_slice", "not (step != 0)"),
        ("strict_assert", "Called strict_unwrap_unchecked on None", 23, 5, "strict", "not (value.is_some())"),
        ("expand_error", cast, 30, 9, "cast", "scalar is false"),
        (
            "expand_assert",
            prefix + "Reinterpret type sizes must match",
            32,
            5,
            "cast",
            "not (size_in == size_out)",
        ),
    ]  # `ndassert!(step > 0)` and `strict_assert!(value.is_some())` without a message are not sites
    records = sites_to_records(sites, repo="rust-ndarray/ndarray", sha=SHA, dataset_version=VERSION)
    by_message = {record.errorMessage: record for record in records}
    assert by_message[slice_end].messagePattern == r"Slice end (.+?) is past end of axis of length (.+?)"
    assert by_message[slice_end].backgroundTag == "assertion-failed"
    assert "ndassert" in by_message[slice_end].tags
    assert by_message[cast].messagePattern == cast  # the prefix is printed: it is part of the message
    assert by_message[cast].backgroundTag == "explicit-panic"
