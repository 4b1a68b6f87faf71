"""`run_harvest` and `run_merge`: Rust trees to baseline JSONL, and merged catalogs written atomically."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from adapters.cli.dataset_tools import RECORD_KEY_ORDER, run_harvest, run_merge
from bot.records import Record, load_catalog, parse_catalog_text
from tests.support.pastes import shared_data_dir

SHA = "0123456789abcdef0123456789abcdef01234567"
VERSION = "2026-01-02T03:04:05.000Z"
SEEDS = Path(__file__).resolve().parents[2] / "fixtures" / "seeds.jsonl"
BURN_SHA = "2c06be351006851d42fdb6df16b976f4a82d9747"
BURN_VERSION = "2026-08-21T20:08:45.000Z"


def write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def harvest(src: Path, repo: str = "acme/burn") -> tuple[int, list[dict[str, Any]]]:
    out = io.StringIO()
    code = run_harvest(src, repo, SHA, out, VERSION)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


# ---- harvest ------------------------------------------------------------------------------------------


def test_harvest_walks_sorted_paths_skips_test_code_and_summarises_per_crate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tree(
        tmp_path,
        {
            # Two sites of one message: one record.
            "crates/burn-a/src/lib.rs": 'fn f() { panic!("A lib {}", 1); }\nfn g() { panic!("A lib {}", 2) }',
            # CRLF and a byte that is not UTF-8: replaced, the file still read.
            "crates/burn-a/src/ops.rs": b'fn f() {\r\n    // \xff\r\n    x.expect("A ops");\r\n}\r\n',
            # `burn-a-b/` sorts before `burn-a/` as a string, as the data set orders its paths.
            "crates/burn-a-b/src/lib.rs": 'fn f() { todo!("A-B lib"); }\n',
            "crates/burn-a/tests/it.rs": 'fn t() { panic!("integration test"); }\n',
            "target/debug/build/out.rs": 'fn f() { panic!("generated"); }\n',
            ".git/hooks/x.rs": 'fn f() { panic!("hidden"); }\n',
            "crates/burn-a/README.md": 'panic!("not Rust")\n',
        },
    )
    code, lines = harvest(tmp_path)
    assert code == 0
    records = [line["record"] for line in lines]
    assert [(r["filePath"], r["lineNumber"], r["errorMessage"]) for r in records] == [
        ("crates/burn-a-b/src/lib.rs", 1, "A-B lib"),
        ("crates/burn-a/src/lib.rs", 1, "A lib {}"),
        ("crates/burn-a/src/ops.rs", 3, "A ops"),
    ]
    # Every field of the record, in the data set's order, and the data set version on each line.
    assert all(list(line["record"]) == list(RECORD_KEY_ORDER) for line in lines)
    assert {line["datasetVersion"] for line in lines} == {VERSION}
    err = capsys.readouterr().err
    assert "burn-a: 2 files, 3 sites, 2 records" in err
    assert "burn-a-b: 1 files, 1 sites, 1 records" in err
    assert "total: 3 files (1 test/bench/example files skipped), 4 sites, 3 records" in err


def test_harvest_skips_the_files_of_out_of_line_test_modules(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "crates/burn-a/src/lib.rs": 'mod ops;\n#[cfg(test)]\nmod tests;\nfn f() { panic!("A lib"); }\n',
            "crates/burn-a/src/tests.rs": 'fn t() { panic!("unit test beside lib.rs"); }\n',
            "crates/burn-a/src/ops.rs": '#[cfg(test)]\npub(crate) mod checks;\nfn f() { panic!("A ops"); }\n',
            "crates/burn-a/src/ops/checks/mod.rs": 'fn t() { panic!("unit test of ops"); }\n',
            "crates/burn-a/src/ops/checks/more.rs": 'fn t() { panic!("below the test module"); }\n',
            "crates/burn-a/src/ops/kernels.rs": 'fn k() { panic!("A kernels"); }\n',
        },
    )
    code, lines = harvest(tmp_path)
    assert code == 0
    assert sorted(line["record"]["errorMessage"] for line in lines) == ["A kernels", "A lib", "A ops"]


def test_harvest_output_loads_as_a_catalog(tmp_path: Path) -> None:
    write_tree(tmp_path / "src", {"crates/burn-a/src/lib.rs": 'fn f() { panic!("Loads {}", 1); }\n'})
    out = io.StringIO()
    assert run_harvest(tmp_path / "src", "acme/burn", SHA, out, VERSION) == 0
    catalog = parse_catalog_text(out.getvalue(), "harvested.jsonl")
    assert not catalog.errors
    assert [e.record.messagePattern for e in catalog.entries] == ["Loads (.+?)"]
    assert catalog.dataset_versions == [VERSION]


def test_harvest_writes_the_data_set_line_of_a_burn_site(tmp_path: Path) -> None:
    data = shared_data_dir()
    body = (
        "    fn deform_conv2d_backward() {\n"
        '        panic!("Can\'t differentiate deform conv 2d backward.");\n'
    )
    write_tree(tmp_path, {"crates/burn-autodiff/src/ops/module.rs": "\n" * 913 + body + "    }\n"})
    out = io.StringIO()
    assert run_harvest(tmp_path, "tracel-ai/burn", BURN_SHA, out, BURN_VERSION) == 0
    published_lines = (data / "burn-panics.jsonl").read_text(encoding="utf-8").splitlines()
    published = {json.loads(line)["record"]["id"]: line for line in published_lines}
    [line] = out.getvalue().splitlines()
    assert line == published["cd525887e618f5e7"]


def test_harvest_of_one_file(tmp_path: Path) -> None:
    write_tree(tmp_path, {"lib.rs": 'fn f() { unreachable!("One file"); }\n'})
    code, lines = harvest(tmp_path / "lib.rs")
    assert code == 0
    assert [line["record"]["filePath"] for line in lines] == ["lib.rs"]


def test_harvest_usage_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert harvest(tmp_path / "missing")[0] == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert harvest(tmp_path, repo="burn")[0] == 2
    assert "OWNER/NAME" in capsys.readouterr().err
    assert run_harvest(tmp_path, "acme/burn", "not a sha", io.StringIO(), VERSION) == 2
    # Nothing to harvest is worth noticing in a script.
    assert harvest(tmp_path) == (1, [])
    assert "no Rust source file" in capsys.readouterr().err


# ---- merge --------------------------------------------------------------------------------------------


def catalog_file(path: Path, records: list[dict[str, object]], version: str) -> Path:
    lines = [json.dumps({"record": record, "datasetVersion": version}) for record in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def site(record_id: str, message: str, path: str, line: int, **fields: object) -> dict[str, object]:
    return {"id": record_id, "errorMessage": message, "filePath": path, "lineNumber": line, **fields}


MODULE = "crates/burn-autodiff/src/ops/module.rs"


def test_merge_writes_analysed_then_uncovered_baseline_with_their_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    analysed = catalog_file(
        tmp_path / "analysed.jsonl",
        [site("seed", "Covered", MODULE, 20, documentation="Why it happens", extraField="kept")],
        "analysed-1",
    )
    baseline = catalog_file(
        tmp_path / "baseline.jsonl",
        [site("b-covered", "Covered", MODULE, 12), site("b-new", "New", MODULE, 40)],
        "baseline-1",
    )
    out = tmp_path / "merged.jsonl"
    assert run_merge([analysed], baseline, out) == 0
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(line["record"]["id"], line["datasetVersion"]) for line in lines] == [
        ("seed", "analysed-1"),
        ("b-new", "baseline-1"),
    ]
    assert lines[0]["record"]["documentation"] == "Why it happens"
    assert lines[0]["record"]["extraField"] == "kept"
    assert list(lines[1]["record"]) == list(RECORD_KEY_ORDER)
    assert "1 analysed + 1 baseline records (1 baseline records covered" in capsys.readouterr().err
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["analysed.jsonl", "baseline.jsonl", "merged.jsonl"]


def test_merge_skips_and_reports_bad_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    analysed = tmp_path / "analysed.jsonl"
    analysed.write_text(
        json.dumps({"record": site("seed", "Good", MODULE, 1)}) + "\n{not json\n", encoding="utf-8"
    )
    baseline = catalog_file(tmp_path / "baseline.jsonl", [site("b", "Other", MODULE, 2)], "b-1")
    out = tmp_path / "merged.jsonl"
    assert run_merge([analysed], baseline, out) == 1
    assert f"error: analysed: {analysed}:2: not JSON" in capsys.readouterr().err
    assert [r.id for r in load_catalog([out]).records] == ["seed", "b"]


def test_merge_with_an_unreadable_input_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    analysed = catalog_file(tmp_path / "analysed.jsonl", [site("seed", "Good", MODULE, 1)], "a-1")
    out = tmp_path / "merged.jsonl"
    assert run_merge([analysed], tmp_path / "missing.jsonl", out) == 2
    assert "missing.jsonl:0: no such file or folder" in capsys.readouterr().err
    assert not out.exists()
    assert run_merge([], analysed, out) == 2


def test_merge_never_leaves_a_half_written_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    analysed = catalog_file(tmp_path / "analysed.jsonl", [site("seed", "Good", MODULE, 1)], "a-1")
    baseline = catalog_file(tmp_path / "baseline.jsonl", [site("b", "Other", MODULE, 2)], "b-1")
    out = tmp_path / "merged.jsonl"
    out.write_text("previous catalog\n", encoding="utf-8")

    def refuse(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    assert run_merge([analysed], baseline, out) == 2
    assert out.read_text(encoding="utf-8") == "previous catalog\n"

    def interrupt(_: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_merge([analysed], baseline, out)
    assert out.read_text(encoding="utf-8") == "previous catalog\n"
    # No temporary file is left behind either.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["analysed.jsonl", "baseline.jsonl", "merged.jsonl"]
    monkeypatch.undo()
    assert run_merge([analysed], baseline, out) == 0
    assert [r.id for r in load_catalog([out]).records] == ["seed", "b"]


def test_merge_of_the_seeds_over_the_burn_baseline(tmp_path: Path) -> None:
    data = shared_data_dir()
    out = tmp_path / "merged.jsonl"
    assert run_merge([SEEDS], data / "burn-panics.jsonl", out) == 0
    merged = load_catalog([out])
    assert not merged.errors and not merged.duplicates
    records = merged.records
    # The three seeds cover their three baseline sites (one of them drifted by two lines).
    assert len(records) == 3 + 1199 - 3
    assert [r.id for r in records[:3]] == [r.id for r in load_catalog([SEEDS]).records]
    assert all(isinstance(r, Record) for r in records)
    assert {"cd525887e618f5e7", "4c49d3fd638b5cf4", "2011fa5a9fadc3e9"}.isdisjoint(r.id for r in records)
    assert merged.dataset_versions == sorted(
        {"2026-08-21T20:08:45.000Z", *load_catalog([SEEDS]).dataset_versions}
    )
    assert os.path.getsize(out) > 0
