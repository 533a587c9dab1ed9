"""Benchmark: the shard store (structablate.store) against the SQLite caches it replaces.

Vectors (the embedding cache), at the default run's scale and at the full-QASPER scale:

* ``put``      — one job writes N vectors, committing every 2,048 (as ``embed_texts`` does);
* ``get all``  — a fresh instance (another job) opens the cache and reads all N vectors;
* ``get 10%``  — a fresh instance reads a random tenth (one chunkset out of a full cache);
* ``put xP``   — P separate processes write N/P vectors each at once (wall time).

LLM generations (the LLM cache): ``put`` of R JSON records one by one (each a client call),
then a fresh instance's one-by-one ``get`` of all of them.

The SQLite baselines are the classes of the previous version, copied verbatim below (WAL mode;
the embedding cache with ``synchronous=NORMAL``, the LLM cache with ``synchronous=FULL`` and one
transaction per record). Every figure is the median of ``--repeats`` runs in fresh folders; the
ratio column (store / SQLite time, < 1: the store is faster) is the number to compare across
machines. Both run on the same local disk here; a network filesystem adds a round trip per file
operation to the store and is where SQLite's WAL is unsafe.

    .venv/bin/python bench/bench_store.py [--scales 6000 250000] [--dir SCRATCH_DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from structablate.embedding import EmbeddingCache
from structablate.llm.cache import StoreCache, canonical_json

# --- baselines: the SQLite caches of the previous version -----------------------------------


class SqliteEmbeddingCache:
    """The previous EmbeddingCache: one SQLite file in WAL mode."""

    def __init__(self, path, timeout_s: float = 600.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=timeout_s)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, dim INTEGER, data BLOB)"
        )
        self._db.commit()

    def get_many(self, keys):
        out = {}
        keys = list(keys)
        for k in range(0, len(keys), 500):
            part = keys[k : k + 500]
            marks = ",".join("?" * len(part))
            q = f"SELECT key, dim, data FROM vectors WHERE key IN ({marks})"
            for key, dim, data in self._db.execute(q, part):
                out[key] = np.frombuffer(data, dtype=np.float32, count=dim)
        return out

    def put_many(self, items):
        self._db.executemany(
            "INSERT OR IGNORE INTO vectors (key, dim, data) VALUES (?, ?, ?)",
            [(k, int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes())
             for k, v in items],
        )
        self._db.commit()

    def close(self):
        self._db.close()


class SqliteGenerationCache:
    """The previous SqliteCache (LLM generations), single-threaded part."""

    def __init__(self, path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._con = sqlite3.connect(self.path, timeout=60)
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.execute("PRAGMA synchronous=FULL")
        self._con.execute("PRAGMA busy_timeout=60000")
        with self._con:
            self._con.execute(
                "CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, "
                "request TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL)")

    def get(self, key):
        row = self._con.execute(
            "SELECT request, response FROM generations WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return {"key": key, "request": json.loads(row[0]), "response": json.loads(row[1])}

    def put(self, key, request, response):
        with self._con:
            self._con.execute(
                "INSERT OR REPLACE INTO generations (key, request, response, created) "
                "VALUES (?, ?, ?, ?)",
                (key, canonical_json(request), canonical_json(response), time.time()))

    def close(self):
        self._con.close()


# --- scenarios --------------------------------------------------------------------------------

IMPLS: dict[str, Callable[[Path], object]] = {
    "sqlite": lambda d: SqliteEmbeddingCache(d / "embeddings.sqlite"),
    "store": lambda d: EmbeddingCache(d / "embeddings"),
}

_WORKER = """
import sys, numpy as np
sys.path[:0] = [sys.argv[5]]
from bench_store import IMPLS
from pathlib import Path
impl, folder, lo, hi = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
keys, vecs = np.load(folder / "keys.npy"), np.load(folder / "vecs.npy", mmap_mode="r")
cache = IMPLS[impl](folder)
for b in range(lo, hi, 2048):
    e = min(b + 2048, hi)
    cache.put_many([(keys[i].tobytes(), vecs[i]) for i in range(b, e)])
cache.close()
"""


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def vector_round(impl: str, folder: Path, keys: list[bytes], vecs: np.ndarray,
                 procs: int, rng: np.random.Generator) -> dict[str, float]:
    n = len(keys)
    out: dict[str, float] = {}
    cache = IMPLS[impl](folder)

    def put() -> None:
        for b in range(0, n, 2048):
            cache.put_many([(keys[i], vecs[i]) for i in range(b, min(b + 2048, n))])
        cache.close()

    out["put"] = timed(put)

    def get_all() -> None:
        c = IMPLS[impl](folder)
        got = c.get_many(keys)
        assert len(got) == n
        c.close()

    out["get all"] = timed(get_all)
    sub = [keys[i] for i in rng.choice(n, size=max(1, n // 10), replace=False)]

    def get_tenth() -> None:
        c = IMPLS[impl](folder)
        assert len(c.get_many(sub)) == len(sub)
        c.close()

    out["get 10%"] = timed(get_tenth)
    if procs > 1:
        conc = folder / "concurrent"
        conc.mkdir()
        np.save(conc / "keys.npy", np.frombuffer(b"".join(keys), np.uint8).reshape(n, 32))
        np.save(conc / "vecs.npy", vecs)
        bounds = np.linspace(0, n, procs + 1).astype(int)
        here = str(Path(__file__).resolve().parent)
        t0 = time.perf_counter()
        ps = [subprocess.Popen([sys.executable, "-c", _WORKER, impl, str(conc), str(lo),
                                str(hi), here])
              for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        codes = [p.wait() for p in ps]
        out[f"put x{procs}"] = time.perf_counter() - t0
        assert codes == [0] * procs, codes
        c = IMPLS[impl](conc)
        assert len(c.get_many(keys)) == n
        c.close()
    return out


def llm_round(impl: str, folder: Path, n: int) -> dict[str, float]:
    reqs = [{"model": "m", "messages": [{"role": "user", "content": f"prompt {i} " * 40}]}
            for i in range(n)]
    keys = [hashlib.sha256(canonical_json(r).encode()).hexdigest() for r in reqs]
    make = ((lambda: SqliteGenerationCache(folder / "generations.sqlite")) if impl == "sqlite"
            else (lambda: StoreCache(folder / "generations")))
    out = {}
    cache = make()

    def put() -> None:
        for k, r in zip(keys, reqs, strict=True):
            cache.put(k, r, {"text": "an answer of some length " * 20})
        cache.close()

    out["put"] = timed(put)

    def get() -> None:
        c = make()
        assert all(c.get(k) is not None for k in keys)
        c.close()

    out["get"] = timed(get)
    return out


def median_table(title: str, runs: dict[str, list[dict[str, float]]], unit_n: int) -> None:
    print(f"\n{title}")
    ops = list(runs["sqlite"][0])
    print(f"  {'operation':10} {'sqlite s':>9} {'store s':>9} {'store/sqlite':>13} "
          f"{'store rec/s':>12}")
    for op in ops:
        a = statistics.median(r[op] for r in runs["sqlite"])
        b = statistics.median(r[op] for r in runs["store"])
        n = unit_n // 10 if op == "get 10%" else unit_n
        print(f"  {op:10} {a:9.3f} {b:9.3f} {b / a:13.2f} {n / b:12,.0f}")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", type=int, nargs="+", default=[6000, 250000],
                    help="vector counts (default: the default run's scale, full QASPER)")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--procs", type=int, default=4, help="writer processes for 'put xP'")
    ap.add_argument("--llm-records", type=int, default=2000)
    ap.add_argument("--dir", default=None, help="where to write (default: a temp folder)")
    args = ap.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="bench-store-", dir=args.dir))
    rng = np.random.default_rng(20260710)
    print(f"bench_store: folder {base}, dim {args.dim}, medians of {args.repeats}, "
          f"{os.cpu_count()} CPUs")
    try:
        for n in args.scales:
            keys = [rng.bytes(32) for _ in range(n)]
            vecs = rng.standard_normal((n, args.dim), dtype=np.float32)
            runs: dict[str, list[dict[str, float]]] = {"sqlite": [], "store": []}
            for r in range(args.repeats):
                for impl in ("sqlite", "store") if r % 2 == 0 else ("store", "sqlite"):
                    folder = base / f"{impl}-{n}-{r}"
                    folder.mkdir()
                    runs[impl].append(vector_round(impl, folder, keys, vecs, args.procs, rng))
                    shutil.rmtree(folder)
            mb = n * args.dim * 4 / 1e6
            median_table(f"vectors: {n:,} x {args.dim} float32 ({mb:,.0f} MB)", runs, n)
        runs = {"sqlite": [], "store": []}
        for r in range(args.repeats):
            for impl in ("sqlite", "store") if r % 2 == 0 else ("store", "sqlite"):
                folder = base / f"llm-{impl}-{r}"
                folder.mkdir()
                runs[impl].append(llm_round(impl, folder, args.llm_records))
                shutil.rmtree(folder)
        median_table(f"LLM records: {args.llm_records:,} put and got one by one", runs,
                     args.llm_records)
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(base)


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
