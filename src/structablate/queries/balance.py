"""Seeded balancing of the surviving queries to ``per_type`` finals per type.

For each type separately (its own generator, ``default_rng([seed, i])`` with ``i`` the type's
index in :data:`~structablate.queries.config.QTYPES`, so dropping one type leaves the others'
draws unchanged): the documents holding survivors of that type are put in a seeded random order
and each document's survivors in a seeded random order; then finals are taken round-robin — one
per document per round, in document order — until ``per_type`` are chosen or the survivors run
out. Round-robin spreads the finals over as many documents as possible (a type with more
survivors than ``per_type`` draws at most ``ceil(per_type / documents)`` from any document).
The input order does not matter (survivors are sorted by qid first).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from structablate.queries.config import QTYPES


def balance(
    survivors: Iterable[tuple[str, str, str]],
    per_type: int,
    seed: int,
    types: Sequence[str] = QTYPES,
) -> list[str]:
    """The qids of the finals, from ``(qid, doc_id, qtype)`` triples of survivors.

    Returned in type order, then in selection order.
    """
    rows = sorted(set(survivors))
    out: list[str] = []
    for qtype in types:
        rng = np.random.default_rng([int(seed), QTYPES.index(qtype)])
        by_doc: dict[str, list[str]] = {}
        for qid, doc_id, t in rows:
            if t == qtype:
                by_doc.setdefault(doc_id, []).append(qid)
        docs = sorted(by_doc)
        docs = [docs[int(i)] for i in rng.permutation(len(docs))] if docs else []
        queues = []
        for d in docs:
            qids = by_doc[d]
            queues.append([qids[int(i)] for i in rng.permutation(len(qids))])
        chosen: list[str] = []
        r = 0
        while len(chosen) < per_type and any(r < len(q) for q in queues):
            for q in queues:
                if r < len(q) and len(chosen) < per_type:
                    chosen.append(q[r])
            r += 1
        out.extend(chosen)
    return out
