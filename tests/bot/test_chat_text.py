"""Chat markup undone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.chat_text import MAX_TEXT_CHARS, normalize_chat_text


def test_slack_escapes_links_and_mentions() -> None:
    text = "see <https://x.dev/a|the docs> and <https://x.dev/b> &lt;B&gt; &amp; <@U123> in <#C1|general>"
    assert normalize_chat_text(text) == "see the docs and https://x.dev/b <B> & @U123 in general"


def test_literal_angle_brackets_survive_outside_slack() -> None:
    assert normalize_chat_text("thread '<unnamed>' panicked") == "thread '<unnamed>' panicked"


def test_fences_quotes_smart_quotes_crlf_ansi_timestamps() -> None:
    text = "```rust\r\n> \u2018a\u2019 \u201cb\u201d\r\n\x1b[1;31m[2025-07-24T22:25:03.123Z] c\x1b[0m\r\n```"
    assert normalize_chat_text(text).strip("\n") == "'a' \"b\"\nc"


def test_huge_pastes_are_cut() -> None:
    assert len(normalize_chat_text("x" * (MAX_TEXT_CHARS + 10))) == MAX_TEXT_CHARS


@given(st.text())
def test_normalize_never_raises(text: str) -> None:
    assert isinstance(normalize_chat_text(text), str)


def test_cursor_movements_break_lines_and_bars_are_dropped() -> None:
    bar = "[00:00:03] \u2588\u2588\u2588\u2588\u2591\u2591 41/100"
    text = f"before\x1b[2K\x1b[1A\x1b[2K{bar}\rafter\x1b[K done\r\n{bar}\nkept 41/100 [ok]"
    assert normalize_chat_text(text) == "before\nafter done\nkept 41/100 [ok]"
    # A bar's line that holds a panic stays: the panic was written on it.
    glued = f"{bar}thread 'main' panicked at src/a.rs:1:2:"
    assert normalize_chat_text(glued) == glued


def test_literal_line_breaks_are_undone_only_around_a_panic() -> None:
    assert normalize_chat_text("path C:\\new\\nested and \\n kept") == "path C:\\new\\nested and \\n kept"
    assert normalize_chat_text("x called `Option::unwrap()` on a `None` value\\nnext") == (
        "x called `Option::unwrap()` on a `None` value\nnext"
    )
    assert normalize_chat_text('log={"msg":"panicked at a.rs:1:2:\\n\\"q\\""} end') == (
        'log={"msg":\npanicked at a.rs:1:2:\n"q"\n} end'
    )


def test_a_longer_limit_reads_further() -> None:
    assert len(normalize_chat_text("x" * (MAX_TEXT_CHARS + 10), MAX_TEXT_CHARS + 5)) == MAX_TEXT_CHARS + 5


PIECES = st.sampled_from(
    [
        "\\n",
        "\\r\\n",
        '"',
        '\\"',
        "{",
        ":",
        "\\",
        "\r",
        "\x1b[2K",
        "\x1b[1A",
        "\u2588\u2588\u2588",
        "1/2",
        "\n",
        "panicked at ",
        "called `Result::",
        "C:\\a\\nb.rs",
    ]
)


@given(st.lists(st.one_of(PIECES, st.text(max_size=5)), max_size=30))
def test_the_new_paths_never_raise(parts: list[str]) -> None:
    text = "".join(parts)
    assert isinstance(normalize_chat_text(text), str)
    assert "\r" not in normalize_chat_text(text)
