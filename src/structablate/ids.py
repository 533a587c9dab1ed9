"""The identifier policy: every id that reaches a file is validated where it enters, never
rewritten silently (docs/contracts.md, "Identifiers").

* **qid** (a question): one token — non-empty, no whitespace of any kind and no control
  character — since TREC ``.run``/``.qrels`` files are whitespace-separated columns.
* **doc_id** (a document): non-empty, no control character (line breaks, tabs, U+0085,
  U+2028/U+2029 included) and no leading or trailing whitespace; inner spaces are allowed
  (Wikipedia titles, file names) and become ``_`` in chunk ids (:func:`id_token`), so two
  doc_ids that differ only there (``alpha beta``, ``alpha_beta``) are refused together at
  corpus build (:func:`check_distinct_tokens`).
* **chunk_id** ``{chunkset}:{id_token(doc_id)}:{k}``: one token by construction.

A refusal names the id, where it came from (``file`` or ``file:line``) and the rule.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

__all__ = ["IdError", "check_distinct_tokens", "check_doc_id", "check_qid", "id_token"]


class IdError(ValueError):
    """An id breaks the policy: ``where`` it came from, and the ``reason`` naming the id and
    the rule; the message is ``"{where}: {reason}"``."""

    def __init__(self, where: str, reason: str):
        self.where = where
        self.reason = reason
        super().__init__(f"{where}: {reason}")


def id_token(doc_id: str) -> str:
    """``doc_id`` with every run of whitespace replaced by one ``_``: chunk ids must be single
    tokens in TREC files (Wikipedia titles have spaces)."""
    return "_".join(doc_id.split()) if any(c.isspace() for c in doc_id) else doc_id


def _control(value: str) -> str | None:
    for c in value:
        if unicodedata.category(c) in ("Cc", "Zl", "Zp"):
            return f"U+{ord(c):04X}"
    return None


def check_qid(qid: str, where: str) -> str:
    """``qid`` when it is one token (module docstring); :class:`IdError` otherwise."""
    if not qid:
        raise IdError(where, "qid is empty; a qid must be one non-empty token")
    bad = next((c for c in qid if c.isspace() or _control(c)), None)
    if bad is not None:
        raise IdError(where, f"qid {qid!r} contains whitespace or a control character "
                      f"(U+{ord(bad):04X}); a qid must be one token, since TREC run and qrels "
                      "files separate their columns by whitespace")
    return qid


def check_doc_id(doc_id: str, where: str) -> str:
    """``doc_id`` when it follows the policy (module docstring); :class:`IdError` otherwise."""
    if not doc_id.strip():
        raise IdError(where, "doc_id is empty")
    bad = _control(doc_id)
    if bad is not None:
        raise IdError(where, f"doc_id {doc_id!r} contains the control character {bad}; a "
                      "doc_id may hold spaces but no line break, tab or other control character")
    if doc_id != doc_id.strip():
        raise IdError(where, f"doc_id {doc_id!r} starts or ends with whitespace")
    return doc_id


def check_distinct_tokens(ids: Iterable[tuple[str, str]]) -> None:
    """Refuse two doc_ids (given as ``(doc_id, where)``) whose chunk-id form
    (:func:`id_token`) is the same, naming both and where each came from."""
    seen: dict[str, tuple[str, str]] = {}
    for doc_id, where in ids:
        token = id_token(doc_id)
        other = seen.get(token)
        if other is not None and other[0] != doc_id:
            raise IdError(
                where, f"doc_id {doc_id!r} and doc_id {other[0]!r} (from {other[1]}) both "
                f"become {token!r} in chunk ids (whitespace is written as _); rename one")
        seen.setdefault(token, (doc_id, where))
