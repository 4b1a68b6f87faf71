"""The `panicbot` command: lookup (rich, --json, --jsonl), catalog validate/stats, and the serve demo."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from adapters.cli.main import MAX_INPUT_BYTES, main

SEEDS_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "seeds.jsonl"
AVG_POOL_ID = "8d1d2fa6df3880bd"
AVG_POOL_MESSAGE = "Can't differentiate avg pool 2d backward."
AVG_POOL_PASTE = (
    f"thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:1498:9:\n{AVG_POOL_MESSAGE}\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
)
UNKNOWN_PASTE = (
    "thread 'main' panicked at src/main.rs:3:5:\nindex out of bounds: the len is 3 but the index is 7\n"
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts from the seed records (the embedded data set these tests were written for; the
    tests of the whole embedded catalog set no catalog) and no chat credentials."""
    for name in (
        "SLACK_BOT_TOKEN",
        "SLACK_APP_TOKEN",
        "SLACK_SIGNING_SECRET",
        "DISCORD_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PANICBOT_CATALOG", str(SEEDS_FILE))
    monkeypatch.setenv("COLUMNS", "200")


def set_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def run(monkeypatch: pytest.MonkeyPatch, argv: list[str], stdin: bytes = b"") -> tuple[int, str]:
    set_stdin(monkeypatch, stdin)
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


def record_line(record_id: str, message: str, pattern: str | None = None, **fields: object) -> str:
    record = {"id": record_id, "errorMessage": message, "messagePattern": pattern, **fields}
    return json.dumps({"record": record, "datasetVersion": "test-1"})


# --- lookup --json ---------------------------------------------------------------------------------------


def test_lookup_json_on_the_embedded_data(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    code, out = run(monkeypatch, ["lookup", "--json"], AVG_POOL_PASTE.encode())
    assert code == 0
    result = json.loads(out)
    assert result["status"] == "matched"
    assert result["auto_reply"] is True
    assert result["answer_panic"] == 0
    panic = result["panics"][0]
    assert panic["path"] == "crates/burn-autodiff/src/ops/module.rs"
    assert (panic["line"], panic["column"]) == (1498, 9)
    assert panic["thread"] == "main"
    assert panic["message"] == AVG_POOL_MESSAGE
    top = result["matches"][0]
    assert top["record_id"] == AVG_POOL_ID
    assert top["known"] is True
    assert isinstance(top["score"], float)
    assert top["score"] > 0
    assert 0.9 <= top["confidence"] <= 1.0
    signals = {reason["signal"] for reason in top["reasons"]}
    assert "pattern" in signals
    assert "location" in signals
    assert all(match["record_id"] != AVG_POOL_ID for match in result["matches"][1:])
    assert capsys.readouterr().err == ""


def test_lookup_words_as_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = run(monkeypatch, ["lookup", "--json", "avg", "pool", "2d", "backward"])
    assert code == 0
    result = json.loads(out)
    assert result["status"] == "matched"
    assert result["matches"][0]["record_id"] == AVG_POOL_ID
    assert result["panics"][0]["path"] is None


def test_lookup_limit_caps_the_matches(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = run(monkeypatch, ["lookup", "--json", "--limit", "1"], AVG_POOL_PASTE.encode())
    assert code == 0
    assert [m["record_id"] for m in json.loads(out)["matches"]] == [AVG_POOL_ID]


def test_lookup_limit_zero_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    code, out = run(monkeypatch, ["lookup", "--json", "--limit", "0"], AVG_POOL_PASTE.encode())
    assert code == 2
    assert out == ""
    assert "--limit must be 1 or more" in capsys.readouterr().err


def test_lookup_unknown_panic_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    paste = UNKNOWN_PASTE
    code, out = run(monkeypatch, ["lookup", "--json"], paste.encode())
    assert code == 1
    result = json.loads(out)
    assert result["status"] == "no_known_record"
    assert result["auto_reply"] is False


# --- lookup --jsonl --------------------------------------------------------------------------------------


def test_lookup_jsonl_keeps_order_and_ids_and_turns_bad_lines_into_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = [
        json.dumps({"id": "first", "text": AVG_POOL_PASTE}),
        "this is not json",
        json.dumps({"id": "no-text", "body": AVG_POOL_PASTE}),
        json.dumps({"id": 4, "text": "avg pool 2d backward"}),
        json.dumps(["not", "an", "object"]),
        json.dumps({"id": "last", "text": "hello there, nothing broke"}),
    ]
    code, out = run(monkeypatch, ["lookup", "--jsonl"], ("\n".join(lines) + "\n").encode())
    assert code == 0
    replies = [json.loads(line) for line in out.splitlines()]
    assert len(replies) == len(lines)
    assert [reply["id"] for reply in replies] == ["first", None, "no-text", 4, None, "last"]
    assert replies[0]["matches"][0]["record_id"] == AVG_POOL_ID
    assert replies[0]["auto_reply"] is True
    assert replies[3]["matches"][0]["record_id"] == AVG_POOL_ID
    assert replies[5]["status"] != "matched"
    for index, words in ((1, "line 2"), (2, "'text'"), (4, "JSON object")):
        assert "error" in replies[index], replies[index]
        assert words in replies[index]["error"]
        assert replies[index]["line"] == index + 1
        assert "matches" not in replies[index]
    for index in (0, 3, 5):
        assert "error" not in replies[index]


def test_lookup_jsonl_text_that_is_not_a_string_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = run(monkeypatch, ["lookup", "--jsonl"], b'{"id": "n", "text": 42}\n')
    assert code == 0
    reply = json.loads(out)
    assert reply["id"] == "n"
    assert "missing string field 'text'" in reply["error"]


# --- rich output -----------------------------------------------------------------------------------------


def test_lookup_prints_the_card(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = run(monkeypatch, ["lookup"], AVG_POOL_PASTE.encode())
    assert code == 0
    assert AVG_POOL_MESSAGE in out
    assert "Best match" in out
    assert "Example fix" in out
    assert "pool::max_pool2d(&x, [2, 2], [2, 2], [0, 0], false);" in out
    assert "crates/burn-autodiff/src/ops/module.rs:1498" in out
    assert out.index(AVG_POOL_MESSAGE) < out.index("Example fix")


def test_lookup_of_an_unknown_panic_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    paste = UNKNOWN_PASTE
    code, out = run(monkeypatch, ["lookup"], paste.encode())
    assert code == 1
    assert "No known record" in out
    assert "src/main.rs" in out


def test_lookup_card_keeps_rust_generics_in_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = run(monkeypatch, ["lookup"], AVG_POOL_PASTE.encode())
    assert code == 0
    assert "from AutodiffTensor<B> where" in " ".join(out.replace("│", " ").split())


# --- bad input -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"   \n\t\n"], ids=["empty", "blank"])
def test_empty_stdin_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, capsys, data: bytes) -> None:
    code, out = run(monkeypatch, ["lookup"], data)
    assert code == 2
    assert out == ""
    err = capsys.readouterr().err
    assert "nothing to look up" in err
    assert "Traceback" not in err


JUNK = {
    "invalid-utf8": b"thread 'main' panicked at src/lib.rs:1:1:\ncaf\xe9 \xff\xfe Can't differentiate\n",
    "binary": bytes(range(256)) * 64,
    "nul-bytes": b"\x00" * 5000 + AVG_POOL_PASTE.encode() + b"\x00" * 5000,
    "lone-surrogate-escape": b"\xed\xa0\x80 avg pool \xc0\xaf",
}


@pytest.mark.parametrize("mode", [[], ["--json"]], ids=["rich", "json"])
@pytest.mark.parametrize("data", list(JUNK.values()), ids=list(JUNK))
def test_invalid_utf8_and_binary_junk_never_raise(
    monkeypatch: pytest.MonkeyPatch, capsys, data: bytes, mode: list[str]
) -> None:
    code, out = run(monkeypatch, ["lookup", *mode], data)
    assert code in (0, 1)
    if mode:
        assert json.loads(out)["status"] in {"matched", "no_known_record", "no_panic"}
    assert "Traceback" not in capsys.readouterr().err


def test_binary_junk_is_flagged_on_stderr(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    code, _ = run(monkeypatch, ["lookup", "--json"], JUNK["binary"])
    assert code in (0, 1)
    assert "does not look like text" in capsys.readouterr().err


def test_jsonl_with_a_junk_line_that_is_valid_utf8_answers_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"\x00\x01\x02 junk\n" + json.dumps({"id": "ok", "text": AVG_POOL_PASTE}).encode() + b"\n"
    code, out = run(monkeypatch, ["lookup", "--jsonl"], data)
    assert code == 0
    replies = [json.loads(line) for line in out.splitlines()]
    assert "error" in replies[0]
    assert replies[1]["matches"][0]["record_id"] == AVG_POOL_ID


def test_jsonl_with_invalid_utf8_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b'{"id": "bad", "text": "caf\xe9"}\n' + json.dumps({"id": "ok", "text": AVG_POOL_PASTE}).encode()
    code, out = run(monkeypatch, ["lookup", "--jsonl"], data + b"\n")
    assert code in (0, 1)
    replies = [json.loads(line) for line in out.splitlines()]
    assert [reply["id"] for reply in replies] == ["bad", "ok"]
    assert replies[1]["matches"][0]["record_id"] == AVG_POOL_ID


def test_a_paste_over_10_mb_is_cut_with_a_note_and_still_answers(
    monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    data = AVG_POOL_PASTE.encode() + b"x" * (MAX_INPUT_BYTES + 1024)
    assert len(data) > 10 * 1024 * 1024
    code, out = run(monkeypatch, ["lookup", "--json"], data)
    assert code == 0
    assert json.loads(out)["matches"][0]["record_id"] == AVG_POOL_ID
    err = capsys.readouterr().err
    assert "over 10 MB" in err
    assert "only its start is read" in err


def test_a_paste_just_under_the_limit_gets_no_note(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    data = AVG_POOL_PASTE.encode()
    data += b"y" * (MAX_INPUT_BYTES - len(data))
    code, _ = run(monkeypatch, ["lookup", "--json"], data)
    assert code == 0
    assert "MB" not in capsys.readouterr().err


# --- catalogs --------------------------------------------------------------------------------------------


def test_catalog_option_with_a_missing_file_exits_2_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = run(monkeypatch, ["lookup", "--json", "--catalog", "missing.jsonl"], AVG_POOL_PASTE.encode())
    assert code == 2
    assert out == ""
    err = capsys.readouterr().err
    assert "missing.jsonl" in err
    assert "no such file or folder" in err
    assert "Traceback" not in err


def test_catalog_option_uses_the_good_line_and_warns_about_the_bad_one(
    monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    good = record_line("tmp-1", "the widget exploded: {}", r"the widget exploded: (.+?)")
    Path("cat.jsonl").write_text(good + "\n{broken\n", encoding="utf-8")
    paste = "thread 'main' panicked at src/widget.rs:10:5:\nthe widget exploded: badly\n"
    code, out = run(monkeypatch, ["lookup", "--json", "--catalog", "cat.jsonl"], paste.encode())
    assert code == 0
    result = json.loads(out)
    assert result["matches"][0]["record_id"] == "tmp-1"
    assert all(match["record_id"] != AVG_POOL_ID for match in result["matches"])
    err = capsys.readouterr().err
    assert "cat.jsonl:2:" in err
    assert "not JSON" in err


def test_panicbot_catalog_env_with_two_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    first = tmp_path / "one.jsonl"
    second = tmp_path / "two.jsonl"
    gizmo = record_line("one-1", "gizmo overheated at {} degrees", "gizmo overheated at (.+?) degrees")
    sprocket = record_line("two-1", "sprocket count must be even", "sprocket count must be even")
    first.write_text(gizmo + "\n", encoding="utf-8")
    second.write_text(sprocket + "\n", encoding="utf-8")
    monkeypatch.setenv("PANICBOT_CATALOG", f"{first}{os.pathsep}{second}")
    for text, expected in (
        ("thread 'main' panicked at src/a.rs:1:1:\ngizmo overheated at 451 degrees\n", "one-1"),
        ("thread 'main' panicked at src/b.rs:2:2:\nsprocket count must be even\n", "two-1"),
    ):
        code, out = run(monkeypatch, ["lookup", "--json"], text.encode())
        assert code == 0
        assert json.loads(out)["matches"][0]["record_id"] == expected
    code, out = run(monkeypatch, ["lookup", "--json"], AVG_POOL_PASTE.encode())
    assert code == 1
    assert json.loads(out)["status"] == "no_known_record"


def test_catalog_option_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PANICBOT_CATALOG", str(tmp_path / "does-not-exist.jsonl"))
    code, out = run(monkeypatch, ["lookup", "--json", "--catalog", str(SEEDS_FILE)], AVG_POOL_PASTE.encode())
    assert code == 0
    assert json.loads(out)["matches"][0]["record_id"] == AVG_POOL_ID


# --- catalog validate / stats ----------------------------------------------------------------------------


def test_catalog_validate_reports_file_line_and_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    lines = [record_line("a", "fine message"), "not json", json.dumps({"record": {"id": "c"}})]
    Path("bad.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out = run(monkeypatch, ["catalog", "validate", "bad.jsonl"])
    assert code == 1
    assert "bad.jsonl:2: not JSON" in out
    assert "bad.jsonl:3: missing required field 'errorMessage'" in out
    assert "1 records, 2 bad, 0 duplicate ids" in out


def test_catalog_validate_passes_on_the_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = run(monkeypatch, ["catalog", "validate", str(SEEDS_FILE)])
    assert code == 0
    assert "3 records, 0 bad, 0 duplicate ids" in out
    assert "error:" not in out


def test_catalog_validate_reports_an_invalid_message_pattern(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    lines = [record_line("ok", "fine message", r"fine message"), record_line("p", "x (y", "(unclosed")]
    Path("patterns.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out = run(monkeypatch, ["catalog", "validate", "patterns.jsonl"])
    assert code == 1
    assert "patterns.jsonl:2: invalid messagePattern" in out
    assert "patterns.jsonl:1:" not in out
    assert "2 records, 1 bad" in out


def test_catalog_validate_warns_about_duplicates_without_failing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    lines = [record_line("same", "first"), record_line("same", "second")]
    Path("dup.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out = run(monkeypatch, ["catalog", "validate", "dup.jsonl"])
    assert code == 0
    assert "warning: dup.jsonl:2: duplicate id same" in out
    assert "1 records, 0 bad, 1 duplicate ids" in out


def test_catalog_validate_on_a_missing_file_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = run(monkeypatch, ["catalog", "validate", "nowhere.jsonl"])
    assert code == 1
    assert "nowhere.jsonl:0: no such file or folder" in out


def test_catalog_validate_keeps_each_problem_on_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("COLUMNS")
    deep = tmp_path / "a-rather-long-folder-name-for-catalogs" / "another-level-of-folders"
    deep.mkdir(parents=True)
    path = deep / "catalog-with-a-bad-line.jsonl"
    path.write_text(record_line("a", "fine") + "\nnot json\n", encoding="utf-8")
    code, out = run(monkeypatch, ["catalog", "validate", str(path)])
    assert code == 1
    assert any(line.startswith(f"error: {path}:2: not JSON") for line in out.splitlines()), out


def test_catalog_stats_on_the_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = run(monkeypatch, ["catalog", "stats", str(SEEDS_FILE)])
    assert code == 0
    assert "3 records in 1 file(s); data set versions: 2026-09-12T17:17:11.597Z" in out
    for title in ("Records per repo", "Records per errorType", "Records per backgroundTag"):
        assert title in out
    assert "tracel-ai/burn" in out
    for tag in ("unimplemented-api-stub", "unsupported-dtype", "unimplemented-op-backward"):
        assert tag in out
    assert "Records without analysis (no documentation and no solutions): 0" in out
    assert "Messages shared by several sites: 0 (0 records)" in out


def test_catalog_stats_counts_shared_messages_and_missing_analysis(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shared = "Tensor rank mismatch"
    lines = [
        record_line("s1", shared, repo="tracel-ai/burn", errorType="panic", filePath="a.rs", lineNumber=1),
        record_line("s2", shared, repo="tracel-ai/burn", errorType="panic", filePath="b.rs", lineNumber=9),
        record_line(
            "s3",
            "a lonely message",
            repo="other/repo",
            errorType="assert",
            backgroundTag="bounds",
            filePath="c.rs",
            lineNumber=3,
            documentation="Explained.",
        ),
    ]
    path = tmp_path / "stats.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out = run(monkeypatch, ["catalog", "stats", str(path)])
    assert code == 0
    assert "3 records in 1 file(s); data set versions: test-1" in out
    assert "Records without analysis (no documentation and no solutions): 2" in out
    assert "Messages shared by several sites: 1 (2 records)" in out
    assert f"    2  {shared}" in out
    assert "a lonely message" not in out
    assert "other/repo" in out
    assert "assert" in out
    assert "bounds" in out
    assert "(none)" in out


def test_catalog_validate_and_stats_on_the_shared_burn_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.pastes import RECORDS_FILE, shared_data_dir

    path = shared_data_dir() / RECORDS_FILE
    count = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    code, out = run(monkeypatch, ["catalog", "validate", str(path)])
    assert code == 0
    assert f"{count} records, 0 bad, 0 duplicate ids" in out
    code, out = run(monkeypatch, ["catalog", "stats", str(path)])
    assert code == 0
    assert f"{count} records in 1 file(s)" in out
    # The shared data set is the baseline: sites without analysis, some messages raised at several sites.
    assert f"Records without analysis (no documentation and no solutions): {count}" in out
    shared_line = next(line for line in out.splitlines() if line.startswith("Messages shared by several"))
    assert not shared_line.startswith("Messages shared by several sites: 0 ")


# --- serve -----------------------------------------------------------------------------------------------


def test_serve_without_credentials_prints_the_demo_card(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = run(monkeypatch, ["serve"])
    assert code == 0
    assert "no Slack or Discord credentials set" in out
    assert "3 records loaded" in out
    assert AVG_POOL_MESSAGE in out
    assert "Example fix" in out
    assert "crates/burn-autodiff/src/ops/module.rs:1498" in out
    assert "panicbot lookup" in out


def test_serve_slack_with_a_bad_setting_names_the_variable_and_hides_the_value(
    monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "not-a-bot-token-s3cret")
    code, out = run(monkeypatch, ["serve"])
    assert code == 2
    assert out == ""
    err = capsys.readouterr().err
    assert "SLACK_BOT_TOKEN" in err
    assert "s3cret" not in err


def test_serve_slack_http_needs_the_signing_secret(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.delenv("SLACK_SIGNING_SECRET", raising=False)
    code, _ = run(monkeypatch, ["serve", "slack", "--http"])
    assert code == 2
    assert "SLACK_SIGNING_SECRET is not set" in capsys.readouterr().err


def test_serve_slack_without_a_token_names_the_variable(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    code, _ = run(monkeypatch, ["serve", "slack"])
    assert code == 2
    assert "SLACK_BOT_TOKEN is not set" in capsys.readouterr().err


def test_serve_discord_without_a_token_names_the_variable(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    code, _ = run(monkeypatch, ["serve", "discord"])
    assert code == 2
    assert "DISCORD_TOKEN is not set" in capsys.readouterr().err
