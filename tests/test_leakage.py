"""The leakage filter (paper, Appendix F) on hand-built pairs at and around its thresholds."""

from __future__ import annotations

import pytest
from rouge_score import rouge_scorer

from structablate.queries.leakage import check_leakage, shared_ngrams
from structablate.text.rouge import rouge_l
from structablate.text.words import tokenize

EVIDENCE = (
    "The battle of the Bulge began in December 1944 in the Ardennes forest of Belgium, when "
    "German armoured divisions struck thinly held American lines under cover of fog and snow."
)


def _pair(n_query: int, n_evidence: int, lcs: int) -> tuple[str, str]:
    """Query and evidence of distinct words with an LCS of ``lcs`` tokens and no shared
    bigram: the shared words sit at even evidence positions and are separated in the query."""
    ev = [f"e{i}" for i in range(n_evidence)]
    shared = ev[0 : 2 * lcs : 2]
    q = []
    for w in shared:
        q.extend([w, f"q{len(q)}"])
    q = q[: max(n_query, len(shared))]
    while len(q) < n_query:
        q.append(f"q{len(q)}")
    assert sum(w.startswith("e") for w in q) == lcs
    return " ".join(q), " ".join(ev)


def test_tokenize_normalization():
    assert tokenize("The Battle-of the BULGE's, (1944)!") == [
        "the", "battle", "of", "the", "bulge", "s", "1944"]
    assert tokenize("Göttingen Ærø café") == ["gottingen", "ærø", "cafe"]
    assert tokenize("snake_case") == ["snake", "case"]


def test_ascii_rouge_equals_rouge_score_default():
    default = rouge_scorer.RougeScorer(["rougeL"])
    q = "When did the fighting in the Belgian woods start, and who led it?"
    assert rouge_l(q, EVIDENCE) == pytest.approx(
        default.score(EVIDENCE, q)["rougeL"].fmeasure, abs=1e-12)


def test_exact_shared_4gram_rejects():
    q = "Which winter saw the battle of the Ardennes open?"
    chk = check_leakage(q, EVIDENCE)
    assert chk.rouge_l <= 0.35  # ROUGE alone would pass: the 4-gram decides
    assert chk.shared == ("the battle of the",)
    assert not chk.passed and chk.reason == "ngram"


def test_shared_3gram_passes():
    q = "Which winter saw a battle of the Ardennes open?"  # "battle of the" only
    chk = check_leakage(q, EVIDENCE)
    assert shared_ngrams(q, EVIDENCE, 3) == ["battle of the"]
    assert chk.shared == () and chk.rouge_l <= 0.35 and chk.passed and chk.reason == "pass"


def test_4gram_found_through_case_and_punctuation():
    q = "what followed THE BATTLE, OF-THE Bulge?"
    chk = check_leakage(q, EVIDENCE)
    assert "battle of the bulge" in chk.shared and not chk.passed


def test_ngram_block_is_configurable():
    q = "Which winter saw a battle of the Ardennes open?"
    assert not check_leakage(q, EVIDENCE, ngram_block=3).passed
    assert check_leakage(q, EVIDENCE, ngram_block=4).passed


def test_rouge_exactly_at_threshold_passes():
    q, ev = _pair(20, 20, 7)  # 2·7/40 = 0.35
    chk = check_leakage(q, ev)
    assert chk.rouge_l == pytest.approx(0.35)
    assert chk.rouge_l <= 0.35 and chk.shared == () and chk.passed


def test_rouge_just_above_threshold_rejects():
    q, ev = _pair(19, 20, 7)  # 14/39 = 0.359
    chk = check_leakage(q, ev)
    assert chk.rouge_l == pytest.approx(14 / 39)
    assert chk.shared == () and not chk.passed and chk.reason == "rouge"


def test_rouge_just_below_threshold_passes():
    q, ev = _pair(21, 20, 7)  # 14/41 = 0.341
    chk = check_leakage(q, ev)
    assert chk.rouge_l == pytest.approx(14 / 41) and chk.passed


def test_both_reasons():
    chk = check_leakage("the battle of the Bulge began in December 1944 in Belgium", EVIDENCE)
    assert chk.reason == "rouge+ngram"


def test_multi_span_max_and_any():
    q, ev = _pair(19, 20, 7)  # leaks ROUGE against ev only
    far = "completely unrelated words about cooking pasta at home tonight"
    chk = check_leakage(q, [far, ev])
    assert chk.rouge_l == pytest.approx(14 / 39) and not chk.passed
    assert check_leakage(q, [far]).passed
    gram = check_leakage("Which winter saw the battle of the Ardennes open?", [far, EVIDENCE])
    assert gram.shared == ("the battle of the",) and not gram.passed


def test_empty_evidence_list_raises():
    with pytest.raises(ValueError):
        check_leakage("a query", [])
