"""Extraction on the paste shapes seen in real Burn bug reports."""

from __future__ import annotations

import itertools

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


# -- real, messy pastes ------------------------------------------------------------------------------------

ORDERING = "crates/burn-fusion/src/stream/execution/ordering.rs"
CLIENT = "/home/ana/.cargo/git/checkouts/burn-6c277d792b0d5d7a/b6e27bd/crates/burn-fusion/src/client.rs"
NOTE = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"


def test_a_blank_line_between_the_header_and_its_message() -> None:
    panic = only(
        f"thread 'main' (81934) panicked at {ORDERING}:49:13:\n\nOrdering is bigger than operations\n{NOTE}"
    )
    assert panic.message == "Ordering is bigger than operations"
    assert panic.location and panic.location.line == 49
    double_spaced = only("thread 'main' panicked at src/x.rs:1:2:\n\n\n\nfirst line\nsecond line\n\nnot it")
    assert double_spaced.message == "first line\nsecond line"


def test_a_header_carrying_its_message_never_takes_the_line_after_a_blank() -> None:
    panic = only("thread 'main' panicked at src/x.rs:1:2: on the header line\n\nsomething else entirely")
    assert panic.message == "on the header line"
    # The next non-blank line is the runtime's note or another panic: the message is empty, as printed.
    assert only(f"thread 'main' panicked at src/x.rs:1:2:\n\n{NOTE}").message == ""
    first, second = extract_panics(
        "thread 'a' panicked at src/x.rs:1:2:\n\nthread 'b' panicked at src/y.rs:3:4:\nboom"
    )
    assert (first.message, second.message) == ("", "boom")
    # Blank lines are skipped only so far: a line far below is not this panic's message.
    assert only("thread 'main' panicked at src/x.rs:1:2:\n" + "\n" * 6 + "unrelated text").message == ""


def test_line_breaks_quoted_as_backslash_n() -> None:
    quoted = (
        "thread 'main' panicked at crates/burn-fusion/src/stream/store/index.rs:49:9:\\n"
        "Ordering is bigger than operations"
    )
    panic = only(quoted)
    assert panic.message == "Ordering is bigger than operations"
    assert panic.location and panic.location.path == "crates/burn-fusion/src/stream/store/index.rs"
    crlf = only(f"thread 'main' panicked at src/x.rs:1:2:\\r\\nfirst\\r\\nsecond\\r\\n{NOTE}")
    assert crlf.message == "first\nsecond"
    old = only("thread 'main' panicked at 'Should read data\\nsecond line', src/a.rs:1:2\\nnote: run with")
    assert old.message == "Should read data\nsecond line"


def test_a_windows_path_keeps_its_backslashes_when_breaks_are_quoted() -> None:
    windows = (
        "thread 'main' panicked at C:\\Users\\nina\\.cargo\\registry\\src\\index.crates.io-6f17d22bba15001f"
        "\\burn-core-0.19.0\\src\\nn\\conv\\checks.rs:12:5:\\nThe channels must be divisible by groups"
    )
    panic = only(windows)
    assert panic.message == "The channels must be divisible by groups"
    assert panic.location and panic.location.path == "crates/burn-core/src/nn/conv/checks.rs"


def test_a_panic_inside_a_json_log_line() -> None:
    line = (
        '{"timestamp":"2025-07-24T22:25:03.123Z","level":"ERROR","fields":{"message":"thread \'main\' '
        "panicked at crates\\\\burn-train\\\\src\\\\learner\\\\base.rs:200:14:\\nCan load model checkpoint.: "
        'Io(\\"NotFound\\")\\n\\u001b[2mnote: run with `RUST_BACKTRACE=1`\\u001b[0m"},"target":"app"}'
    )
    panic = only(line)
    assert panic.message == 'Can load model checkpoint.: Io("NotFound")'
    assert panic.location and panic.location.path == "crates/burn-train/src/learner/base.rs"


BAR = "[00:01:02] \u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2591\u2591 40/100 loss 0.452"


def test_a_progress_bar_drawn_over_and_around_the_panic() -> None:
    log = (
        f"\r{BAR}\r\x1b[2K{BAR}"  # the bar redraws itself; the panic is written on the bar's line
        f"thread 'DSU-0-0' panicked at {ORDERING}:49:13:\n"
        f"\x1b[2K\x1b[1A\x1b[2K{BAR}\r"  # another thread redraws between the header and the message
        "Ordering is bigger than operations\n"
        f"\r\x1b[2K{BAR}\n{NOTE}\n"
    )
    panic = only(log)
    assert panic.message == "Ordering is bigger than operations"
    assert panic.thread == "DSU-0-0"
    tqdm = (
        " 40%|\u2588\u2588\u2588\u2588      | 40/100 [00:01<00:02, 20.00it/s]\r"
        "thread 'main' panicked at src/train.rs:7:5:\nloss is NaN\n"
        " 41%|\u2588\u2588\u2588\u2588      | 41/100 [00:01<00:02, 20.00it/s]\n"
    )
    assert only(tqdm).message == "loss is NaN"


def test_a_tensor_check_block_survives_a_bar_drawn_inside_it() -> None:
    panic = only(
        "thread 'main' panicked at src/x.rs:1:1:\n=== Tensor Operation Error ===\n  Operation: 'Reshape'\n"
        f"\r\x1b[2K{BAR}\r  Reason:\n    1. The given shape is wrong.\n\n{NOTE}"
    )
    assert panic.message == (
        "=== Tensor Operation Error ===\n  Operation: 'Reshape'\n  Reason:\n    1. The given shape is wrong."
    )


def training_log(size: int) -> str:
    line = "[00:01:02] Epoch 3/10 - Iteration 1234 - Loss 0.4521 - lr 1.0e-3\n"
    return line * (size // len(line))


def test_a_5_mb_paste_is_read_to_its_end() -> None:
    from bot.extract import extract

    paste = training_log(5 * 1024 * 1024) + (
        f"thread 'main' panicked at {ORDERING}:49:13:\nOrdering is bigger than operations\n{NOTE}\n"
        "stack backtrace:\n   0: rust_begin_unwind\n   1: burn_fusion::stream::execution::ordering::f\n"
    )
    result = extract(paste)
    assert not result.truncated
    [panic] = result.panics
    assert panic.message == "Ordering is bigger than operations"
    assert panic.location and panic.location.line == 49
    assert [frame.index for frame in panic.frames] == [0, 1]


def test_panics_all_over_a_long_paste_keep_their_order() -> None:
    filler = training_log(300_000)
    paste = "".join(
        f"{filler}thread 'main' panicked at src/a.rs:{n}:1:\nboom {n}\n{NOTE}\n" for n in range(1, 6)
    )
    assert [panic.message for panic in extract_panics(paste)] == [f"boom {n}" for n in range(1, 6)]
    headerless = filler * 2 + "called `Result::unwrap()` on an `Err` value: Io(NotFound)\n" + filler
    [unwrap] = extract_panics(headerless)
    assert (unwrap.kind, unwrap.message) == (
        "message",
        "called `Result::unwrap()` on an `Err` value: Io(NotFound)",
    )


def test_a_panic_after_a_megabyte_of_header_fragments_is_found() -> None:
    paste = "thread 'a' panicked at x:\n" * 100_000 + "thread 'main' panicked at src/a.rs:1:2:\nreal one\n"
    assert [panic.message for panic in extract_panics(paste)] == ["real one"]
    one_line = "panicked at " * 200_000 + "\nthread 'main' panicked at src/a.rs:1:2:\nreal one\n"
    assert [panic.message for panic in extract_panics(one_line)] == ["real one"]


def test_an_absurd_paste_is_cut_and_says_so() -> None:
    from bot.extract import MAX_PASTE_CHARS, extract

    header = "thread 'main' panicked at src/a.rs:1:2:\n"
    before = header + "found\n" + "x" * (MAX_PASTE_CHARS - 100)
    assert len(before) < MAX_PASTE_CHARS
    assert extract(before) == extract(before)  # deterministic
    assert not extract(before).truncated and extract(before).panics[0].message.startswith("found")
    beyond = "x" * MAX_PASTE_CHARS + header + "too far\n"
    result = extract(beyond)
    assert result.truncated
    assert [panic.kind for panic in result.panics] == ["query"]


def test_windows_cover_every_marker_without_overlapping() -> None:
    from bot.chat_text import PANIC_MARKERS
    from bot.extract import WINDOW_MAX, panic_windows

    paste = ("y" * 5_000 + "\nthread 'a' panicked at x:\n") * 400 + "panicked at " * 100_000
    windows = panic_windows(paste)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(windows))
    assert all(end - start <= WINDOW_MAX + 4_096 for start, end in windows)
    for marker in PANIC_MARKERS:
        at = paste.find(marker)
        while at >= 0:
            assert any(start <= at and at + len(marker) <= end for start, end in windows)
            at = paste.find(marker, at + 1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(PIECES, st.text(max_size=8)), min_size=1, max_size=20), st.integers(1, 40))
def test_long_pastes_of_junk_never_raise(parts: list[str], repeat: int) -> None:
    from bot.chat_text import MAX_TEXT_CHARS
    from bot.extract import extract

    junk = "".join(parts)
    paste = (junk * (MAX_TEXT_CHARS // max(len(junk), 1) + 1))[: MAX_TEXT_CHARS + repeat * 997] + junk
    result = extract(paste)
    assert not result.truncated
    assert len(result.panics) <= 20


MESSY = st.sampled_from(
    [
        "\\n",
        "\\r\\n",
        '\\"',
        '"',
        "{",
        '":"',
        "\\\\",
        "\\u001b[31m",
        "\r",
        "\x1b[2K",
        "\x1b[1A",
        "\u2588\u2588\u2588\u2591",
        " 40/100",
        "C:\\src\\nn\\x.rs:1:2:",
        "thread 'main' panicked at ",
        "src/x.rs:1:2:",
        "called `Result::unwrap()` on an `Err` value: ",
        "CallError(task panicked on device runner thread: ",
        ")",
        "PoisonError { .. }",
        'JoinError::Panic(Id(3), "',
        "\n\n",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(MESSY, PIECES, st.text(max_size=6)), max_size=30))
def test_messy_pastes_never_raise_and_follow_ons_are_consistent(parts: list[str]) -> None:
    from bot.extract import root_panic_index

    panics = extract_panics("".join(parts))
    root = root_panic_index(panics)
    assert (root is None) == all(panic.follow_on for panic in panics)
    if root is not None:
        assert not panics[root].follow_on and all(panic.follow_on for panic in panics[:root])
    for position, panic in enumerate(panics):
        if panic.kind == "relayed":
            assert position > 0 and panics[position - 1].follow_on


# -- follow-on panics --------------------------------------------------------------------------------------


def test_a_poisoned_lock_after_the_root_cause_is_a_follow_on() -> None:
    from bot.extract import root_panic_index

    panics = extract_panics(
        "thread 'worker' panicked at crates/a/src/x.rs:1:1:\nroot cause\n"
        "thread 'main' panicked at crates/b/src/y.rs:2:2:\n"
        "called `Result::unwrap()` on an `Err` value: PoisonError { .. }\n"
        "thread 'main' panicked at library/core/src/panicking.rs:221:5:\n"
        "panic in a destructor during cleanup\n"
        "thread 'sender' panicked at src/z.rs:3:3:\n"
        "called `Result::unwrap()` on an `Err` value: SendError { .. }\n"
        "thread 'recv' panicked at src/z.rs:4:4:\nchannel closed: RecvError\n"
        "thread 'main' panicked at src/main.rs:9:9:\n"
        "called `Result::unwrap()` on an `Err` value: Any { .. }\n"
    )
    assert [panic.follow_on for panic in panics] == [False, True, True, True, True, True]
    assert root_panic_index(panics) == 0


def test_an_echo_pasted_alone_or_first_is_not_a_follow_on() -> None:
    from bot.extract import root_panic_index

    [poison] = extract_panics(
        "thread 'main' panicked at src/y.rs:2:2:\n"
        "called `Result::unwrap()` on an `Err` value: PoisonError { .. }"
    )
    assert not poison.follow_on
    first, second = extract_panics(
        f"thread 'DSU-0-0' panicked at {ORDERING}:49:13:\nOrdering is bigger than operations\n"
        f"thread 'DSU-1-0' panicked at {ORDERING}:49:13:\nOrdering is bigger than operations\n"
    )
    assert (first.follow_on, second.follow_on) == (False, True)  # the second is an echo of the first
    assert root_panic_index([]) is None
    assert root_panic_index(extract_panics("deform conv backward")) == 0


def test_a_device_runner_call_error_relays_the_real_message() -> None:
    from bot.extract import root_panic_index

    relayed = (
        f"thread 'cli-trainer' panicked at {CLIENT}:200:14:\n"
        "called `Result::unwrap()` on an `Err` value: CallError(task panicked on device runner thread: "
        "Ordering is bigger than operations (len 49 > 0))\n"
        f"{NOTE}\n"
    )
    relaying, cause = extract_panics(relayed)
    assert relaying.follow_on and relaying.location and relaying.location.line == 200
    assert (cause.kind, cause.message, cause.location, cause.follow_on) == (
        "relayed",
        "Ordering is bigger than operations (len 49 > 0)",
        None,
        False,
    )
    assert cause.thread is None
    assert root_panic_index([relaying, cause]) == 1
    # With the device thread's own panic printed first, that one is the root and the rest echo it.
    full = (
        f"thread 'DSU-0-0' panicked at {ORDERING}:49:13:\nOrdering is bigger than operations (len 49 > 0)\n"
    )
    panics = extract_panics(full + relayed)
    assert [(panic.kind, panic.follow_on) for panic in panics] == [
        ("header", False),
        ("header", True),
        ("relayed", True),
    ]
    assert root_panic_index(panics) == 0


def test_a_relayed_message_carrying_its_location_and_other_relays() -> None:
    _, cause = extract_panics(
        "thread 'main' panicked at src/main.rs:3:9:\ncalled `Result::unwrap()` on an `Err` value: "
        "CallError(task panicked on device runner thread: panicked at src/kernel.rs:12:5: bad kernel)"
    )
    assert cause.message == "bad kernel"
    assert cause.location and (cause.location.path, cause.location.line) == ("src/kernel.rs", 12)
    _, joined = extract_panics(
        "thread 'main' panicked at src/main.rs:3:9:\ncalled `Result::unwrap()` on an `Err` value: "
        'JoinError::Panic(Id(7), "worker said \\"no\\"", ..)'
    )
    assert (joined.kind, joined.message) == ("relayed", 'worker said "no"')
    # A relay with no message to extract is an echo after another panic, and nothing is added.
    panics = extract_panics(
        "thread 'a' panicked at src/a.rs:1:1:\nroot\nthread 'b' panicked at src/b.rs:2:2:\n"
        "called `Result::unwrap()` on an `Err` value: CallError(task panicked on device runner thread with a "
        "non-string payload)"
    )
    assert [(panic.kind, panic.follow_on) for panic in panics] == [("header", False), ("header", True)]


def test_panic_keeps_its_positional_fields() -> None:
    from bot.extract import Location, Panic

    location = Location("src/a.rs", "src/a.rs", 1, 2)
    panic = Panic("boom", location, "main", 7, (), "header")
    assert (panic.message, panic.location, panic.thread, panic.thread_id, panic.kind, panic.follow_on) == (
        "boom",
        location,
        "main",
        7,
        "header",
        False,
    )


# -- real pastes from public Burn issues -------------------------------------------------------------------


def test_a_header_path_wrapped_by_the_terminal_is_joined_again() -> None:
    windows = only(
        "thread 'main' panicked at C:\\Users\\me\\.cargo\\registry\\src\\in\n"
        "dex.crates.io-1949cf8c6b5b557f\\burn-cubecl-0.20.0\\src\\kernel\\prng\\uniform.rs:23:6:\n"
        f"Kernel to never fail\n{NOTE}"
    )
    assert (windows.kind, windows.message, windows.thread) == ("header", "Kernel to never fail", "main")
    assert windows.location is not None
    assert (windows.location.path, windows.location.line, windows.location.column) == (
        "crates/burn-cubecl/src/kernel/prng/uniform.rs",
        23,
        6,
    )
    # A space chat put at the wrap, inside a word of a Unix path; the message on the path's line.
    unix = only(
        "thread 'main' panicked at /home/me/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/burn-fu \n"
        "sion-0.20.0/src/stream/execution/ordering.rs:65:38: Ordering is bigger than operations"
    )
    assert unix.message == "Ordering is bigger than operations"
    assert unix.location and (unix.location.path, unix.location.line) == (ORDERING, 65)
    # Wrapped right after `panicked at`, and inside the line and column.
    assert only("thread 'main' panicked at\n  src/main.rs:3:5:\nboom").message == "boom"
    split_numbers = only("thread 'main' panicked at src/main.rs:3\n5:7:\nboom")
    assert split_numbers.location and (split_numbers.location.line, split_numbers.location.column) == (35, 7)
    # Not a wrap: prose, or a next line that is a panic of its own.
    assert only("it panicked at startup, see\nsrc/main.rs:3:5: here").kind == "query"
    [panic] = extract_panics("thread 'a' panicked at x\nthread 'b' panicked at src/y.rs:3:4:\nboom")
    assert (panic.thread, panic.message) == ("b", "boom")
    assert panic.location and panic.location.path == "src/y.rs"


def test_a_relay_broken_over_two_lines_still_gives_the_relayed_message() -> None:
    relaying_text = (
        "called `Result::unwrap()` on an `Err` value: CallError(task panicked on device\n"
        "runner thread: Should have handle for tensor TensorId { value: 3584 })"
    )
    relaying, cause = extract_panics(
        f"thread 'main' panicked at crates/burn-fusion/src/client.rs:200:14:\n{relaying_text}\n{NOTE}"
    )
    assert relaying.follow_on and relaying.message == relaying_text
    assert (cause.kind, cause.message, cause.follow_on) == (
        "relayed",
        "Should have handle for tensor TensorId { value: 3584 }",
        False,
    )
    # Pasted without its header, the unwrap's open `CallError(` runs on to the line that closes it.
    message, relayed = extract_panics(f"got this:\n{relaying_text}\n{NOTE}")
    assert (message.kind, message.message, message.follow_on) == ("message", relaying_text, True)
    assert (relayed.kind, relayed.message) == (
        "relayed",
        "Should have handle for tensor TensorId { value: 3584 }",
    )


def test_an_old_format_message_cut_before_its_closing_quote_keeps_its_lines() -> None:
    first = (
        "called `Result::unwrap()` on an `Err` value: Torch(\"Could not run 'aten::empty.memory_format' "
        "with arguments from the 'CUDA' backend. This could be because"
    )
    second = "the operator doesn't exist for this backend [..]"
    third = "If you are a Facebook employee using PyTorch on mobile, please visit [..]"
    for end in (
        "\n\nCPU: registered at [..]\n",
        f"\n{NOTE}\n",
        "\nstack backtrace:\n   0: f\n",
        "\nnote: x\n",
    ):
        panic = only(f"thread 'main' panicked at '{first}\n{second}\n{third}{end}")
        assert (panic.kind, panic.message, panic.location, panic.thread) == (
            "header",
            f"{first}\n{second}\n{third}",
            None,
            "main",
        )
    # The next panic ends it and is found.
    cut, after = extract_panics(
        f"thread 'main' panicked at '{first}\n{second}\nthread 'b' panicked at src/b.rs:1:2:\nboom"
    )
    assert (cut.message, after.message) == (f"{first}\n{second}", "boom")
    # Only the location cut: the closing quote is not part of the message.
    assert only("thread 'main' panicked at 'index out of bounds',").message == "index out of bounds"
    assert only("thread 'main' panicked at 'from the 'CUDA'").message == "from the 'CUDA'"


def test_a_logger_panic_line_ends_the_message_before_it() -> None:
    fusion = (
        "ERROR burn_train::learner::application_logger: PANIC => panicked at "
        "crates/burn-fusion/src/stream/execution/ordering.rs:65:38:"
    )
    first, second = extract_panics(
        f"thread 'main' panicked at src/a.rs:1:2:\nfirst message\n{fusion}\n"
        "Ordering is bigger than operations\n"
    )
    assert first.message == "first message"
    assert (second.message, second.kind) == ("Ordering is bigger than operations", "header")
    assert second.location and (second.location.path, second.location.line) == (ORDERING, 65)
    first, second = extract_panics(
        "thread 'main' panicked at src/a.rs:1:2:\nfirst message\n"
        "[2026-04-17T00:12:32Z ERROR my_app] panicked at src/main.rs:5:5:\nsecond\n"
        "[2026-04-17T00:12:33Z INFO  my_app::shutdown] stopping"
    )
    assert (first.message, second.message) == ("first message", "second")
    # A logger's next line ends a message too.
    for log_line in (
        "2025-07-24T22:25:04Z INFO  burn_train::learner::epoch: Executing training step",
        "[00:01:02] WARN burn_train::metric next",
        "DEBUG cubecl_runtime::tune: tuning",
    ):
        assert only(f"thread 'main' panicked at src/a.rs:1:2:\nboom\n{log_line}\nnot it").message == "boom"
    # A `panicked at` inside a relaying value or a string is the message's, not a new panic.
    _, cause = extract_panics(
        "thread 'main' panicked at src/main.rs:3:9:\ncalled `Result::unwrap()` on an `Err` value: "
        "CallError(task panicked on device\nrunner thread: panicked at src/kernel.rs:12:5: bad kernel)"
    )
    assert (cause.kind, cause.message) == ("relayed", "bad kernel")
    assert only(
        "thread 'main' panicked at src/a.rs:1:2:\nsaid \"x panicked at src/b.rs:3:4: y\" twice"
    ).message == ('said "x panicked at src/b.rs:3:4: y" twice')


def test_the_pasters_own_note_after_a_message_line_is_dropped() -> None:
    panic = only(
        "thread 'main' panicked at src/a.rs:1:2:\n"
        "    attempt to divide by zero            # \u2190 real root cause, fires ONCE\n"
    )
    assert panic.message.strip() == "attempt to divide by zero"
    for note in ("  // mine", "   <-- here", "  \u2190 this", "  #"):
        assert only(f"thread 'main' panicked at src/a.rs:1:2: boom{note}").message == "boom"
    [unwrap] = extract_panics("called `Result::unwrap()` on an `Err` value: Io(NotFound)    # the loader")
    assert unwrap.message == "called `Result::unwrap()` on an `Err` value: Io(NotFound)"
    # Kept: inside a string or a Debug value, after one space, with nothing before it, or not a note mark.
    kept = (
        'bad name: "a   # b"',
        "Shape { dims: [2,   # 3] }",
        "issue #42",
        "see https://x.dev  //ok",
        "count  #3",
        "a < b   <= c",
    )
    for message in kept:
        assert only(f"thread 'main' panicked at src/a.rs:1:2:\n{message}").message == message
    debug = "Shape {\n    dims: 2,   # not a note\n}"
    assert only(f"thread 'main' panicked at src/a.rs:1:2:\n{debug}").message == debug


def test_hostile_megabytes_still_find_the_final_panic() -> None:
    """Megabytes of header fragments, one line of `panicked at`, unwrap fragments and near-locations: only
    the lines that can start a header are tried, and the real panic at the end is still found, wrapped too."""
    from bot.extract import extract

    size = 2 * 1024 * 1024
    final = (
        "thread 'main' panicked at crates/burn-fusion/src/stream/execution/ordering.rs:49:13:\n"
        "Ordering is bigger than operations\n"
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
    )
    wrapped = final.replace("ordering.rs:49", "order\ning.rs:49")
    shapes = (
        "thread 'a' panicked at x:\n",
        "panicked at ",
        "called `Result::unwrap()` on an `Err` value: ",
        "thread 'a' panicked at x:1\n",
        "panicked at x:1:",
        "> `&lt;panicked at` \x07 |\n",
    )
    for shape in shapes:
        for panic in (final, wrapped):
            paste = shape * (size // len(shape)) + "\n" + panic
            messages = [found.message for found in extract(paste).panics]
            assert "Ordering is bigger than operations" in messages, (shape, panic)
