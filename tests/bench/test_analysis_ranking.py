"""bench/analysis_ranking.py: the scoring on a tiny catalog of its own (no files, no network)."""

from __future__ import annotations

import csv
from pathlib import Path

from bench.analysis_ranking import (
    Evidence,
    Message,
    attach_evidence,
    group_messages,
    mark_done,
    read_evidence,
    read_pastes,
    score,
    write_ranking,
)


def record(
    rid: str, message: str, path: str, tag: str = "explicit-panic", repo: str = "tracel-ai/burn"
) -> dict:
    return {"id": rid, "repo": repo, "errorMessage": message, "filePath": path, "backgroundTag": tag}


CATALOG = [
    # one message spelled two ways by two releases, in two files: one message, two records
    record("a1", "Can't load module {:?}", "crates/burn-core/src/record/file.rs"),
    record("a2", "Can't load module {name}", "crates/burn-core/src/record/recorder.rs"),
    record("b1", "Kernel should be compiled", "crates/burn-cubecl/src/kernel/unary.rs"),
    record(
        "c1", "Reshape dims must match", "crates/burn-tensor/src/tensor/api/check.rs", "tensor-check-failed"
    ),
    record("d1", "impossible state", "crates/burn-tensor/src/tensor/api/base.rs", "unreachable-invariant"),
]
RELEASES = {"a1": {"burn@v0.16.0"}, "a2": {"burn@v0.17.0", "burn@v0.18.0"}, "c1": {"burn@v0.18.0"}}


def ranked(evidence: list[Evidence], analysed: list[dict] | None = None) -> list[Message]:
    messages = group_messages(CATALOG, RELEASES, {})
    mark_done(messages, analysed or [])
    attach_evidence(messages, evidence)
    return score(messages)


def by_message(messages: list[Message], text: str) -> Message:
    return next(m for m in messages if m.message.startswith(text))


def test_releases_spellings_of_a_message_are_one_message_with_its_record_ids() -> None:
    messages = ranked([])
    load = by_message(messages, "Can't load module")
    assert len(messages) == 4
    assert load.ids == ["a1", "a2"]
    assert len(load.releases) == 3


def test_a_message_with_evidence_outranks_every_message_without() -> None:
    url = "https://github.com/tracel-ai/burn/issues/1"
    without = ranked([])
    # without evidence, the tensor argument check (area and reachability) leads
    assert without[0].message.startswith("Reshape dims")
    with_evidence = ranked([Evidence(url=url, kind="issue", message="Kernel should be compiled")])
    assert with_evidence[0].message == "Kernel should be compiled"
    assert with_evidence[0].evidence == [url]
    assert any("evidence 1 URL" in reason for reason in with_evidence[0].reasons)
    assert all(m.score < with_evidence[0].score for m in with_evidence[1:])


def test_evidence_by_record_id_or_file_reaches_only_that_message() -> None:
    messages = ranked(
        [
            Evidence(url="u1", kind="issue", record_id="a2"),
            Evidence(
                url="u2", kind="issue", message="Reshape dims must match", file="burn-tensor/src/other.rs"
            ),
        ]
    )
    assert by_message(messages, "Can't load module").evidence == ["u1"]
    assert by_message(messages, "Reshape dims").evidence == []  # the file named is not the record's


def test_more_reports_score_more_and_an_internal_invariant_scores_less() -> None:
    one = ranked([Evidence(url="u1", kind="issue", record_id="b1")])
    two = ranked(
        [Evidence(url="u1", kind="issue", record_id="b1"), Evidence(url="u2", kind="PR", record_id="b1")]
    )
    assert by_message(two, "Kernel").score > by_message(one, "Kernel").score
    messages = ranked([])
    assert by_message(messages, "impossible state").score < by_message(messages, "Kernel").score


def test_done_records_are_marked_by_id_or_by_file_and_message() -> None:
    analysed = [
        {"id": "zz", "errorMessage": "Can't load module {:?}",
         "filePath": "crates/burn-core/src/record/file.rs", "documentation": "written"},
        {"id": "c1", "errorMessage": "Reshape dims must match", "solutions": ["do this"]},
        {"id": "b1", "errorMessage": "Kernel should be compiled"},  # a bare record: no analysis
    ]  # fmt: skip
    messages = ranked([], analysed)
    assert by_message(messages, "Can't load module").done == "partial 1/2"
    assert by_message(messages, "Reshape dims").done == "yes"
    assert by_message(messages, "Kernel").done == ""


def test_evidence_files_and_the_written_ranking(tmp_path: Path) -> None:
    evidence = tmp_path / "evidence.csv"
    evidence.write_text(
        "message,file,record_id,url,kind,note\n"
        "Kernel should be compiled,crates/burn-cubecl/src/kernel/unary.rs,,https://x/issues/3,issue,n\n",
        encoding="utf-8",
    )
    pastes = tmp_path / "pastes.csv"
    pastes.write_text(
        "url,expected_message,expected_file,note\n"
        "https://x/pull/4,Reshape dims must match,crates/burn-tensor/src/tensor/api/check.rs,n\n"
        "https://x/issues/5,,,no record\n",
        encoding="utf-8",
    )
    items = read_evidence(evidence) + read_pastes(pastes)
    assert [(e.url, e.kind) for e in items] == [("https://x/issues/3", "issue"), ("https://x/pull/4", "PR")]
    messages = ranked(items)
    out = tmp_path / "ranking.csv"
    assert write_ranking(messages, out, top=1) == 2  # the top row, and the other message with evidence
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [row["rank"] for row in rows] == ["1", "2"]
    assert {row["evidence"] for row in rows} == {"https://x/issues/3", "https://x/pull/4"}
