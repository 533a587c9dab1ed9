"""Configuration of the synthetic query generator (``corpora.<name>.queries``).

Defaults follow the paper (Appendix F, Table 11: ``per_type`` 250, ``rouge_max`` 0.35,
``ngram_block`` 4); the span sizes and the number of candidates per document are structablate's
choices (the paper does not state them), documented in ``docs/queries.md``. Unknown keys raise,
so a typo never falls back to a default silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

QTYPES = ("factoid", "underspecified", "multihop", "structural")


@dataclass(frozen=True)
class QueryGenConfig:
    seed: int = 20260710
    """Seed of span sampling and of balancing (``numpy.random.default_rng``)."""
    types: tuple[str, ...] = QTYPES
    per_doc: Mapping[str, int] | int = field(default_factory=lambda: {t: 3 for t in QTYPES})
    """Candidate spans (hence generated queries) per document and type (an int: every type)."""
    per_type: int = 250
    """Balanced finals per type (fewer when fewer survive)."""
    rouge_max: float = 0.35
    ngram_block: int = 4
    sentences: tuple[int, int] = (1, 3)
    """Factoid / underspecified span: this many consecutive sentences (inclusive range) of one
    paragraph."""
    multihop_sentences: tuple[int, int] = (1, 2)
    """Each of the two multihop spans: this many consecutive sentences of one paragraph."""
    span_min_chars: int = 80
    span_max_chars: int = 800
    structural_min_chars: int = 400
    structural_max_chars: int | None = None
    """A structural span is a whole top-level section of at least / at most this many
    characters (null: no upper bound)."""
    underspecified_require_name: bool = True
    """An underspecified span must contain a capitalized word that does not start a sentence
    (a name the query can then avoid)."""
    max_evidence_chars: int = 6000
    """Evidence shown to the model is cut at a word boundary to this many characters (long
    structural sections); the gold span and the filter always use the whole span."""
    max_tokens: int = 96
    """Generation limit per call (model tokens)."""
    use_schema: bool = True
    """Constrain decoding to ``{"query": string}``; the parser also accepts plain text."""
    paraphrase: bool = True
    """Paraphrase each survivor (the paper's second call); off: the first query ships."""
    min_query_words: int = 3
    max_query_words: int = 40
    max_query_chars: int = 300
    min_distinct_ratio: float = 0.5
    """A query of 8+ tokens with fewer distinct tokens than this share is a degenerate loop."""

    def __post_init__(self) -> None:
        per_doc = self.per_doc
        if isinstance(per_doc, int):
            per_doc = {t: int(per_doc) for t in QTYPES}
        else:
            per_doc = {**{t: 3 for t in QTYPES}, **{k: int(v) for k, v in dict(per_doc).items()}}
        object.__setattr__(self, "per_doc", per_doc)
        object.__setattr__(self, "types", tuple(self.types))

    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any] | None) -> QueryGenConfig:
        cfg = dict(cfg or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(cfg) - known)
        if unknown:
            raise ValueError(f"unknown query generation keys: {unknown} (known: {sorted(known)})")
        if "types" in cfg:
            cfg["types"] = tuple(cfg["types"])
            bad = [t for t in cfg["types"] if t not in QTYPES]
            if bad or not cfg["types"]:
                raise ValueError(f"queries.types must be a non-empty subset of {QTYPES}: {bad}")
        per_doc = {t: 3 for t in QTYPES}
        raw = cfg.get("per_doc", {})
        if isinstance(raw, int):
            per_doc = {t: int(raw) for t in QTYPES}
        else:
            for k, v in dict(raw).items():
                if k not in QTYPES:
                    raise ValueError(f"queries.per_doc: unknown type {k!r}")
                per_doc[k] = int(v)
        cfg["per_doc"] = per_doc
        for key in ("sentences", "multihop_sentences"):
            if key in cfg:
                lo, hi = (int(x) for x in cfg[key])
                if not 1 <= lo <= hi:
                    raise ValueError(f"queries.{key} must be [lo, hi] with 1 <= lo <= hi")
                cfg[key] = (lo, hi)
        out = cls(**cfg)
        if not 0 <= out.rouge_max <= 1 or out.ngram_block < 1 or out.per_type < 0:
            raise ValueError("queries: rouge_max in [0, 1], ngram_block >= 1, per_type >= 0")
        if out.span_min_chars > out.span_max_chars:
            raise ValueError("queries: span_min_chars > span_max_chars")
        return out

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["types"] = list(self.types)
        d["per_doc"] = dict(self.per_doc)
        d["sentences"] = list(self.sentences)
        d["multihop_sentences"] = list(self.multihop_sentences)
        return d
