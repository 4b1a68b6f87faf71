"""Extraction on the paste shapes seen in real Burn bug reports."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.extract import extract_panics

REGISTRY = (
    "/home/ana/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/burn-autodiff-0.19.0/src/ops/module.rs"
)


def only(text: str):
    panics = extract_panics(text)
    assert len(panics) == 1, panics
    return panics[0]


def test_new_format_header_then_message() -> None:
    panic = only(
        "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:915:9:\n"
        "Can't differentiate deform conv 2d backward.\n"
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
    )
    assert panic.message == "Can't differentiate deform conv 2d backward."
    assert panic.location is not None
    assert (panic.location.path, panic.location.line, panic.location.column) == (
        "crates/burn-autodiff/src/ops/module.rs",
        915,
        9,
    )
    assert panic.thread == "main"
    assert panic.kind == "header"


def test_header_and_message_joined_on_one_line_as_chat_does() -> None:
    panic = only(
        "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:915:9: Can't differentiate "
        "deform conv 2d backward."
    )
    assert panic.message == "Can't differentiate deform conv 2d backward."
    assert panic.location and panic.location.line == 915


def test_thread_id_and_custom_thread_names() -> None:
    panic = only("thread '<unnamed>' (3761708) panicked at src/lib.rs:3:5:\nboom here")
    assert (panic.thread, panic.thread_id, panic.message) == ("<unnamed>", 3761708, "boom here")
    for name in ("DSU-4-0", "Device-4-0", "nn::embedding::tests::initializer_zeros"):
        assert only(f"thread '{name}' panicked at src/lib.rs:3:5:\nboom").thread == name


def test_old_format_with_quoted_message_even_over_lines() -> None:
    panic = only("thread 'main' panicked at 'Should read data: Err(Io)', crates/burn-train/src/x.rs:12:30")
    assert panic.message == "Should read data: Err(Io)"
    assert panic.location and (panic.location.path, panic.location.line) == ("crates/burn-train/src/x.rs", 12)
    multi = only("thread 'main' panicked at 'first line\nsecond line', src/a.rs:1:2\nnote: run with")
    assert multi.message == "first line\nsecond line"


def test_logger_line() -> None:
    panic = only(
        "2025-07-24T22:25:03Z ERROR burn_train::learner::application_logger: PANIC => panicked at "
        "crates/burn-train/src/learner/base.rs:200:14:\nCan load model checkpoint.: Io(NotFound)"
    )
    assert panic.message == "Can load model checkpoint.: Io(NotFound)"
    assert panic.location and panic.location.path == "crates/burn-train/src/learner/base.rs"


def test_multiline_debug_and_tensor_check_block() -> None:
    panic = only(
        f"thread 'main' panicked at {REGISTRY}:722:9:\n"
        "=== Tensor Operation Error ===\n"
        "  Operation: 'From Data'\n"
        "  Reason:\n"
        "    1. Given dimensions differ from the tensor rank. Tensor rank: '2', given dimensions: '[1]'.\n"
        "\n"
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
    )
    assert panic.message.startswith("=== Tensor Operation Error ===\n  Operation: 'From Data'")
    assert panic.message.endswith("given dimensions: '[1]'.")
    assert panic.location and panic.location.path == "crates/burn-autodiff/src/ops/module.rs"
    debug = only(
        "thread 'main' panicked at src/x.rs:1:1:\nbad shape: Shape {\n    dims: [\n        2,\n    ],\n}"
    )
    assert debug.message.endswith("    ],\n}")


def test_backtrace_frames_are_attached() -> None:
    panic = only(
        "thread 'main' panicked at src/main.rs:10:5:\nboom\nstack backtrace:\n"
        "   0: rust_begin_unwind\n             at /rustc/abc/library/std/src/panicking.rs:665:5\n"
        "  12: burn_autodiff::ops::module::avg_pool2d_backward\n"
        f"             at {REGISTRY}:1498:9\n"
        "  13: main\n"
    )
    assert [f.index for f in panic.frames] == [0, 12, 13]
    assert panic.frames[1].location and panic.frames[1].location.path.endswith(
        "burn-autodiff/src/ops/module.rs"
    )
    assert panic.frames[2].location is None


def test_cargo_test_output() -> None:
    text = (
        "running 2 tests\ntest nn::tests::a ... FAILED\n\nfailures:\n\n---- nn::tests::a stdout ----\n\n"
        "thread 'nn::tests::a' panicked at crates/burn-nn/src/x.rs:5:9:\nassertion `left == right` failed: "
        "sizes differ\n  left: 2\n right: 3\nnote: run with `RUST_BACKTRACE=1`\n\n\n"
        "failures:\n    nn::tests::a\n\n"
        "test result: FAILED. 1 passed; 1 failed; 0 ignored"
    )
    panic = only(text)
    assert panic.thread == "nn::tests::a"
    assert panic.message == "assertion `left == right` failed: sizes differ\n  left: 2\n right: 3"


def test_build_script_stderr_is_dedented() -> None:
    text = (
        "error: failed to run custom build command for `foo v0.1.0 (/w/foo)`\n\nCaused by:\n"
        "  process didn't exit successfully: `/w/target/debug/build/foo/build-script-build` "
        "(exit status: 101)\n"
        "  --- stderr\n"
        "  thread 'main' panicked at crates/burn-import/src/x.rs:7:5:\n"
        "  Failed to parse: Error {\n      kind: Bad,\n  }\n"
        "  note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
    )
    panic = only(text)
    assert panic.message == "Failed to parse: Error {\n    kind: Bad,\n}"


def test_chat_markup_is_undone() -> None:
    text = (
        "got this &gt; <https://github.com/tracel-ai/burn/issues/1|issue>\r\n```rust\r\n"
        "thread \u2018main\u2019 panicked at C:\\Users\\Ana\\.cargo\\registry\\src\\"
        "index.crates.io-6f17d22bba15001f"
        "\\burn-tensor-0.19.0\\src\\tensor\\api\\check.rs:58:17:\r\n"
        "\x1b[31mIndex &lt;5&gt; &amp; more\x1b[0m\r\n```"
    )
    panic = only(text)
    assert panic.message == "Index <5> & more"
    assert panic.location and panic.location.path == "crates/burn-tensor/src/tensor/api/check.rs"


def test_quoted_lines_and_timestamps() -> None:
    text = (
        "> [2025-07-24T22:25:03.123Z] thread 'main' panicked at src/lib.rs:1:1:\n"
        "> [2025-07-24T22:25:03.124Z] the message\n"
    )
    assert only(text).message == "the message"


def test_several_panics_keep_their_order() -> None:
    text = (
        "thread 'main' panicked at crates/a/src/x.rs:1:1:\nroot cause\n"
        "thread 'worker' panicked at crates/b/src/y.rs:2:2:\n"
        "called `Result::unwrap()` on an `Err` value: PoisonError { .. }\n"
    )
    panics = extract_panics(text)
    assert [p.message for p in panics] == [
        "root cause",
        "called `Result::unwrap()` on an `Err` value: PoisonError { .. }",
    ]


def test_headerless_unwrap_and_plain_queries() -> None:
    unwrap = only("getting called `Result::unwrap()` on an `Err` value: Io(NotFound) in my loader")
    assert unwrap.kind == "message"
    assert unwrap.message.startswith("called `Result::unwrap()`")
    query = only("  deform conv backwrd ")
    assert (query.kind, query.message, query.location) == ("query", "deform conv backwrd", None)
    assert extract_panics("") == []
    assert extract_panics(" \n\t ") == []


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_extractor_never_raises_on_any_text(text: str) -> None:
    for panic in extract_panics(text):
        assert isinstance(panic.message, str)


PIECES = st.sampled_from(
    [
        "thread 'main' panicked at ",
        "panicked at '",
        "', ",
        "src/x.rs:1:2:",
        "C:\\a\\b.rs:3:4",
        "\n",
        "stack backtrace:\n",
        "   0: f\n",
        "             at ",
        "=== Tensor Operation Error ===\n",
        "    1. ",
        "&lt;",
        "```",
        "> ",
        "\x1b[31m",
        "\r\n",
        "called `Result::unwrap()` on an `Err` value: ",
        "registry/src/x/burn-a-0.1.0/src/y.rs",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(PIECES, st.text(max_size=8)), max_size=30))
def test_extractor_never_raises_on_panic_shaped_junk(parts: list[str]) -> None:
    for panic in extract_panics("".join(parts)):
        if panic.location is not None:
            assert panic.location.line is None or panic.location.line >= 0


def test_discord_inline_code_and_html_entities() -> None:
    panic = only("`thread 'main' panicked at src/lib.rs:1:1:`\n`it&#39;s &quot;broken&quot;`")
    assert panic.message == 'it\'s "broken"'
    assert panic.location and panic.location.path == "src/lib.rs"


def test_hostile_lines_stay_linear() -> None:
    """A single line of 20,000 `panicked at` took minutes with an unbounded path; now it is immediate."""
    assert extract_panics("panicked at " * 20_000)[0].kind == "query"
    assert extract_panics("thread 'a' panicked at x:" * 20_000)[0].kind == "query"


def test_limits_on_panics_frames_and_message_lines() -> None:
    from bot.extract import MAX_FRAMES, MAX_MESSAGE_LINES, MAX_PANICS

    many = "".join(f"thread 'main' panicked at src/a.rs:{n}:1:\nboom {n}\n\n" for n in range(1, 40))
    assert len(extract_panics(many)) == MAX_PANICS
    long_message = "thread 'main' panicked at src/a.rs:1:1:\n" + "\n".join(f"line {n}" for n in range(500))
    assert extract_panics(long_message)[0].message.count("\n") == MAX_MESSAGE_LINES - 1
    frames = "\n".join(f"  {n}: f{n}\n             at src/a.rs:{n}:1" for n in range(400))
    deep = f"thread 'main' panicked at src/a.rs:1:1:\nboom\nstack backtrace:\n{frames}"
    assert len(extract_panics(deep)[0].frames) == MAX_FRAMES


def test_a_note_joined_onto_the_message_line_is_not_the_message() -> None:
    pasted = (
        "thread 'main' panicked at crates/burn-tensor/src/tensor/bool_ops.rs:323:9: Tensors should not be "
        "empty note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
    )
    [panic] = extract_panics(pasted)
    assert panic.message == "Tensors should not be empty"
    [panic] = extract_panics("thread 'main' panicked at src/a.rs:1:2:\nBad value 3 stack backtrace: 0: std")
    assert panic.message == "Bad value 3"
