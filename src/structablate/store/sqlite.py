"""Import of the SQLite caches of earlier versions into a store folder.

Earlier releases kept the embedding cache (``embeddings.sqlite``, table ``vectors``) and the
LLM cache (``generations.sqlite``, table ``generations``) in one SQLite file each; a store
refuses to open such a file and names ``python -m structablate.store import-sqlite``. The
import reads the file read-only and writes every row as a record of the matching typed store
(vectors keep their bytes; a generation's record is ``{"key", "request", "response"}`` under
:func:`~structablate.store.shard.key_from_hex` of its key), so a rerun reads them as cache hits.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from structablate.store.files import StoreError
from structablate.store.folder import Store
from structablate.store.shard import key_from_hex
from structablate.store.typed import JsonStore, VectorStore


def import_sqlite(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> tuple[str, int]:
    """Copy an SQLite cache of earlier versions into a store folder.

    ``embeddings.sqlite`` (table ``vectors``) becomes a :class:`VectorStore`,
    ``generations.sqlite`` (table ``generations``) a :class:`JsonStore` of LLM records.
    Returns (kind, records copied). A damaged file raises :class:`StoreError` naming it.
    """
    import sqlite3

    src = Path(src)
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such SQLite cache")
    try:
        con = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "vectors" in tables:
            store: Store = VectorStore(dst, label="embedding cache")
            n = 0
            rows = con.execute("SELECT key, dim, data FROM vectors")
            while batch := rows.fetchmany(4096):
                n += store.put_many((bytes(k), bytes(d)) for k, _, d in batch)
            kind = "vectors"
        elif "generations" in tables:
            store = JsonStore(dst, label="LLM cache")
            n = 0
            rows = con.execute("SELECT key, request, response FROM generations ORDER BY rowid")
            while batch := rows.fetchmany(1024):
                n += store.put_many(
                    (key_from_hex(k), JsonStore.encode({"key": k, "request": json.loads(rq),
                                                    "response": json.loads(rs)}))
                    for k, rq, rs in batch)
            kind = "json"
        else:
            raise StoreError(f"{src}: neither an embedding nor an LLM cache (tables {tables})")
        store.close()
        con.close()
        return kind, n
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{src}: the SQLite cache is damaged ({exc}); it cannot be imported. "
                         "Delete it: the new cache is refilled by the next run") from exc
