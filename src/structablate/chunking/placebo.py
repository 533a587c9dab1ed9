"""Placebo heading paths (condition P): real heading paths shuffled across documents.

Paper §3.2 and Appendix E.3: bucket the unique ``(document, path)`` pairs by depth, permute
each bucket toward a *cross-document derangement* under a fixed seed, and report the residual
same-document assignments. Every placebo path is a real path of the same depth, and each bucket
hands out exactly the multiset of paths it holds, so format, depth and length distributions
match the real breadcrumbs while the content says nothing about the chunk.

Algorithm, per depth bucket (pairs sorted by ``(doc_id, path)`` so the result does not depend
on input order):

1. draw a uniform permutation with ``numpy.random.default_rng(seed)``; pair ``i`` receives the
   path of pair ``perm[i]``;
2. repair each same-document assignment ``i`` by swapping its source with position ``j``
   (drawn uniformly among the admissible ones) such that after the swap neither ``i`` nor ``j``
   holds a path of its own document. A swap never creates a new same-document assignment.
   (Repair visits positions in a seeded random order.)

Greedy repair is optimal: a conflict of document ``d`` with no admissible swap implies
``d`` holds more than half the bucket, and then the residual equals the lower bound
``2·m_d − n`` (``m_d`` pairs of ``d`` among ``n``). The report gives both figures per bucket.

Beyond the paper, a placebo path can be *textually identical* to the pair's real path
(``("Introduction",)`` shuffled onto another paper's ``("Introduction",)``): that leaks the
real heading. Such assignments are always counted; ``forbid_identical=True`` runs a second
repair pass that removes them where a swap (or, failing that, a 3-cycle) can do so without
creating a same-document or an identical assignment; it sweeps until nothing changes (at most
8 sweeps). Identity compares headings after whitespace normalisation and
case-folding. Same-document repair always runs first and is never traded for identity.

Depth-0 pairs (an empty path) map to the empty path and are reported apart: there is nothing
to shuffle.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

_MAX_SWEEPS = 8
_MAX_CYCLE_TRIES = 256

Path = tuple[str, ...]
Pair = tuple[str, Path]


def path_key(path: Sequence[str]) -> tuple[str, ...]:
    """Comparison key for "textually identical" paths: whitespace-normalised, case-folded."""
    return tuple(" ".join(str(h).split()).casefold() for h in path)


def _repair(
    perm: np.ndarray,
    docs: np.ndarray,
    keys: np.ndarray,
    rng: np.random.Generator,
    *,
    fix_identical: bool,
    guard_identical: bool,
) -> int:
    """Repair ``perm`` in place; return the number of moves made.

    A bad assignment at ``i``: its source's document equals ``i``'s (or, when
    ``fix_identical``, its source's path key equals ``i``'s). A move is a swap of sources
    between ``i`` and some ``j`` after which neither position is bad, where "bad" includes
    identity when ``guard_identical``. Same-document repair (``fix_identical=False``) with the
    identity guard falls back to swaps that only avoid same-document assignments. Identity
    repair falls back to a 3-cycle (``i`` takes ``j``'s source, ``j`` takes ``k``'s, ``k``
    takes ``i``'s) when no swap is admissible.
    """
    n = len(perm)
    moves = 0
    if n < 2:
        return moves

    def accepts(pos: np.ndarray | int, src: np.ndarray | int, identity: bool) -> np.ndarray:
        ok = docs[src] != docs[pos]
        if identity:
            ok = ok & (keys[src] != keys[pos])
        return ok

    # Visit positions in a seeded random order so no document is favoured by sort order.
    for i in rng.permutation(n):
        s = perm[i]
        if accepts(i, s, fix_identical):
            continue
        # after a swap with j: i receives perm[j], j receives s
        ok = accepts(i, perm, guard_identical) & accepts(np.arange(n), s, guard_identical)
        ok[i] = False
        cand = np.flatnonzero(ok)
        if cand.size == 0 and guard_identical and not fix_identical:
            ok = accepts(i, perm, False) & accepts(np.arange(n), s, False)
            ok[i] = False
            cand = np.flatnonzero(ok)
        if cand.size:
            j = int(cand[rng.integers(cand.size)])
            perm[i], perm[j] = perm[j], perm[i]
            moves += 1
            continue
        if not fix_identical:
            continue  # swaps are optimal for same-document repair (module docstring)
        # 3-cycle: i <- perm[j], j <- perm[k], k <- s; try j in random order
        takes_s = accepts(np.arange(n), s, True)
        takes_s[i] = False
        js = np.flatnonzero(accepts(i, perm, True))
        for j in js[rng.permutation(js.size)][:_MAX_CYCLE_TRIES]:
            ok = takes_s & accepts(j, perm, True)
            ok[j] = False
            ks = np.flatnonzero(ok)
            if ks.size:
                k = int(ks[rng.integers(ks.size)])
                perm[i], perm[j], perm[k] = perm[j], perm[k], s
                moves += 1
                break
    return moves


def assign_placebo_paths(
    pairs: Sequence[tuple[str, Sequence[str]]],
    seed: int,
    forbid_identical: bool = False,
) -> tuple[dict[Pair, Path], dict]:
    """Map each unique ``(doc_id, path)`` pair to a placebo path of the same depth.

    ``pairs`` may repeat; paths are taken as given (truncate them to the condition's depth
    first, e.g. ``path[:3]``). Returns ``(mapping, report)``; ``mapping`` keys are
    ``(doc_id, tuple(path))``. The report holds:

    - ``n_pairs``, ``seed``, ``forbid_identical``;
    - ``residual_same_doc``: pairs whose placebo path comes from their own document;
    - ``min_same_doc``: the unavoidable number (sum of ``max(0, 2·m_d − n)`` over buckets);
    - ``identical_paths``: pairs whose placebo path is textually identical to their own
      (includes residual self-assignments), and ``identical_cross_doc`` (identical paths from
      other documents only);
    - ``by_depth``: per depth (string key), ``n``, ``n_docs``, ``max_doc_share``,
      ``residual_same_doc``, ``min_same_doc``, ``identical_paths``;
    - ``empty_paths``: depth-0 pairs (mapped to ``()``).
    """
    unique: set[Pair] = {(str(d), tuple(str(h) for h in p)) for d, p in pairs}
    buckets: dict[int, list[Pair]] = defaultdict(list)
    for pair in unique:
        buckets[len(pair[1])].append(pair)

    rng = np.random.default_rng(seed)
    mapping: dict[Pair, Path] = {}
    by_depth: dict[str, dict] = {}
    totals = Counter()
    for depth in sorted(buckets):
        items = sorted(buckets[depth])
        n = len(items)
        if depth == 0:
            for pair in items:
                mapping[pair] = ()
            totals["empty_paths"] += n
            continue
        doc_codes = {d: c for c, d in enumerate(sorted({d for d, _ in items}))}
        key_codes = {k: c for c, k in enumerate(sorted({path_key(p) for _, p in items}))}
        docs = np.array([doc_codes[d] for d, _ in items], dtype=np.int64)
        keys = np.array([key_codes[path_key(p)] for _, p in items], dtype=np.int64)

        perm = rng.permutation(n)
        _repair(perm, docs, keys, rng, fix_identical=False, guard_identical=forbid_identical)
        if forbid_identical:
            # identity repair can unlock further swaps; sweep until a sweep changes nothing
            for _ in range(_MAX_SWEEPS):
                if not _repair(perm, docs, keys, rng, fix_identical=True, guard_identical=True):
                    break

        for i, pair in enumerate(items):
            mapping[pair] = items[perm[i]][1]

        counts = np.bincount(docs)
        m = int(counts.max())
        same = int((docs[perm] == docs).sum())
        ident = int((keys[perm] == keys).sum())
        ident_cross = int(((keys[perm] == keys) & (docs[perm] != docs)).sum())
        lower = max(0, 2 * m - n)
        by_depth[str(depth)] = {
            "n": n,
            "n_docs": len(doc_codes),
            "max_doc_share": m / n,
            "residual_same_doc": same,
            "min_same_doc": lower,
            "identical_paths": ident,
            "identical_cross_doc": ident_cross,
        }
        totals["residual_same_doc"] += same
        totals["min_same_doc"] += lower
        totals["identical_paths"] += ident
        totals["identical_cross_doc"] += ident_cross

    report = {
        "seed": seed,
        "forbid_identical": forbid_identical,
        "n_pairs": len(unique),
        "residual_same_doc": totals["residual_same_doc"],
        "min_same_doc": totals["min_same_doc"],
        "identical_paths": totals["identical_paths"],
        "identical_cross_doc": totals["identical_cross_doc"],
        "empty_paths": totals["empty_paths"],
        "by_depth": by_depth,
    }
    return mapping, report
