"""structablate: a placebo-controlled ablation of document-structure mechanisms in dense retrieval.

The package holds every algorithm of the study as importable, tested functions; the Snakemake
workflow (``Snakefile``, ``rules/``) only decides what is computed and when.

Conventions used throughout:

* character offsets are half-open ``[start, end)`` on a document's flat text (Python ``str``
  indices, i.e. Unicode code points, not bytes);
* paragraph and section indices are 0-based; paragraph ranges ``[para_start, para_end)`` are
  half-open;
* "content tokens" are tokens of the embedder's tokenizer over the chunk content, without
  special tokens; prefix tokens are counted separately.
"""

__version__ = "0.1.0"

MAX_LEVEL = 4
"""Deepest section level stored in a sections table (paper, Appendix E.2 / H)."""
