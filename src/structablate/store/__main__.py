"""``python -m structablate.store``: inspect and maintain cache folders.

``info`` (shards, bytes, records; read-only), ``verify`` (reads every record, moves corrupt
shards to ``quarantine/``), ``gc`` (removes temporary files of killed writers), ``compact``
(merges small shards, under the folder's ``compact`` stage lock) and ``import-sqlite`` (brings
an SQLite cache of earlier versions into a store folder, :mod:`structablate.store.sqlite`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from structablate.store.folder import Store
from structablate.store.lock import LockSettings
from structablate.store.sqlite import import_sqlite
from structablate.store.typed import JsonStore, ScoreStore, VectorStore


def open_any(path: str, readonly: bool = False) -> Store:
    """The store in folder ``path``, as the typed store its ``STORE.json`` marker names."""
    marker = Path(path) / "STORE.json"
    try:
        kind = json.loads(marker.read_text())["kind"]
    except (OSError, ValueError, KeyError) as exc:
        raise SystemExit(f"{path}: not a store folder ({marker}: {exc})") from exc
    cls = {"vectors": VectorStore, "json": JsonStore, "float64": ScoreStore}.get(kind, Store)
    return cls(path, readonly=readonly)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m structablate.store",
                                 description="Inspect and maintain structablate cache folders.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, text in [("info", "count shards and records"),
                       ("verify", "read every record; move corrupt shards to quarantine/"),
                       ("gc", "remove temporary files of killed writers"),
                       ("compact", "merge small shards (run while no job writes, or any time)")]:
        sub.add_parser(name, help=text).add_argument("path")
    imp = sub.add_parser("import-sqlite", help="copy an earlier SQLite cache into a store folder")
    imp.add_argument("src")
    imp.add_argument("dst")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    if args.cmd == "import-sqlite":
        kind, n = import_sqlite(args.src, args.dst)
        print(f"imported {n} {kind} records from {args.src} into {args.dst}")
        return 0
    store = open_any(args.path, readonly=args.cmd == "info")
    if args.cmd == "info":
        paths = store.shard_paths()
        size = sum(p.stat().st_size for p in paths)
        print(json.dumps({"kind": store.kind, "shards": len(paths), "bytes": size,
                          "records": len(store)}, indent=2))
    elif args.cmd == "verify":
        print(json.dumps(store.verify(), indent=2))
    elif args.cmd == "gc":
        print(f"removed {len(store.gc())} temporary file(s)")
    elif args.cmd == "compact":
        with store.stage_lock("compact", settings=LockSettings(wait_s=0)):
            merged, written = store.compact()
        print(f"merged {merged} shards into {written}")
    store.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
