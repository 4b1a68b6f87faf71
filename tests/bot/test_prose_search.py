"""A typed question is also searched in the words of the analyses written for records (`bot.prose_search`)."""

from __future__ import annotations

import pytest

from bot.lookup import PROSE_CONFIDENCE, PanicLookup, result_json
from bot.prose_search import ProseIndex, stem, words
from bot.records import default_catalog

AVG_POOL = "Can't differentiate avg pool 2d backward."
# No word of the message: its analysis speaks of differentiating the average pooling's own gradient.
QUESTION = "gradient of the averaging layer's own gradient with autodiff"


@pytest.fixture(scope="module")
def lookup() -> PanicLookup:
    return PanicLookup(default_catalog())


def test_a_question_without_the_message_words_reaches_its_record(lookup: PanicLookup) -> None:
    result = lookup.lookup(QUESTION)
    assert result.panics[0].kind == "query"
    assert result.best is None and not result.auto_reply  # never an answer, never posted unasked
    found = [m for m in result.matches if m.record.errorMessage == AVG_POOL]
    assert found, [m.record.errorMessage for m in result.matches]
    hit = found[0]
    assert not hit.known
    assert hit.reasons[-1].signal == "analysis"
    assert hit.reasons[-1].detail.startswith("words of its analysis: ")
    assert 0.0 < hit.confidence < 0.5
    assert AVG_POOL in [m.record.errorMessage for m in result.matches[:3]]


def test_turned_off_the_question_finds_nothing_of_it(lookup: PanicLookup) -> None:
    off = PanicLookup(default_catalog())
    off.prose_search = False
    result = off.lookup(QUESTION)
    assert AVG_POOL not in [m.record.errorMessage for m in result.matches]
    assert all(r.signal != "analysis" for m in result.matches for r in m.reasons)


def test_a_message_match_still_ranks_first(lookup: PanicLookup) -> None:
    result = lookup.lookup("can't differentiate avg pool 2d backward")
    assert result.best is not None and result.best.record.errorMessage == AVG_POOL
    assert all(r.signal != "analysis" for m in result.matches for r in m.reasons)  # not searched


def test_analysis_hits_rank_with_the_weak_message_matches_by_confidence(lookup: PanicLookup) -> None:
    # No message answers the question: its few words shared with messages and the analyses' words are
    # ranked together (bench/typed_questions.py: top-1 11.6 % -> 51.8 % when they were kept after them).
    result = lookup.lookup("checkpointer thread hangs after the disk filled up")
    assert result.best is None and not result.auto_reply
    # A match found only in the analyses' words; one whose message matched too may add that reason.
    signals = [
        "analysis" if all(r.signal == "analysis" for r in m.reasons) else m.reasons[0].signal
        for m in result.matches
    ]
    assert "analysis" in signals and "text" in signals
    confidences = [m.confidence for m in result.matches]
    assert confidences == sorted(confidences, reverse=True)
    assert result.matches[0].record.errorMessage == "Can send message to checkpointer thread."
    prose = [m for m, signal in zip(result.matches, signals, strict=True) if signal == "analysis"]
    assert all(m.confidence <= PROSE_CONFIDENCE for m in prose)
    assert len(result.matches) <= 5
    # The JSON shape is unchanged: the same keys, the new reason's signal.
    shown = result_json(result)["matches"]
    first = signals.index("analysis")
    assert set(shown[first]) == set(shown[signals.index("text")])
    assert shown[first]["reasons"][0]["signal"] == "analysis"


def test_the_index_is_built_on_the_first_typed_query_only() -> None:
    lookup = PanicLookup(default_catalog())
    assert "prose_index" not in lookup.__dict__  # not at construction: cold start
    lookup.lookup("thread 'main' panicked at src/main.rs:1:5:\nattempt to divide by zero")
    assert "prose_index" not in lookup.__dict__  # a pasted panic never needs it
    lookup.lookup(QUESTION)
    assert "prose_index" in lookup.__dict__
    analysed = sum(1 for entry in lookup.catalog.entries if entry.record.has_analysis)
    assert 0 < len(lookup.prose_index) <= analysed


def test_words_and_the_index() -> None:
    assert stem("hangs") == stem("hanging") == stem("hanged") == "hang"
    # Snowball's English stemmer: a question's "averaging" meets an analysis's "average".
    assert stem("averaging") == stem("average") == stem("averages")
    assert words("CubeCountTooLarge on my_tensor crashes") == ["cube", "count", "larg", "tensor"]
    index = ProseIndex([(7, default_catalog().entries[0].record)])
    assert index.search("zzz qqq", 3) == []
    assert index.search("", 3) == []


def test_the_stemmer_is_imported_on_the_first_typed_question_not_at_start_up() -> None:
    """snowballstemmer imports the stemmers of all its languages (0.1-0.3 s): a pasted panic never pays."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from bot.lookup import PanicLookup\n"
        "from bot.records import default_catalog\n"
        "lookup = PanicLookup(default_catalog())\n"
        "lookup.lookup(\"thread 'main' panicked at src/main.rs:1:5:\\nattempt to divide by zero\")\n"
        "print('snowballstemmer' in sys.modules)\n"
        f"lookup.lookup({QUESTION!r})\n"
        "print('snowballstemmer' in sys.modules)\n"
    )
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["False", "True"]
