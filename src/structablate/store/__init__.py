"""Content-addressed caches that many jobs on many nodes share safely, even over NFS.

A *store* is a folder of immutable shard files. Every writer (one process) commits the records
it collected as a shard of its own, written to a temporary name, ``fsync``-ed and renamed into
place, so a reader on any node never sees a partial record, and a writer killed with
``SIGKILL`` loses at most its last uncommitted batch. Nothing relies on ``fcntl``/``flock`` or
on a file that two processes modify: only exclusive create, ``link`` and ``rename`` within one
folder, which NFS v3 and v4 implement atomically on the server.

The package, from the ground up (import each name from the module that defines it):

* :mod:`~structablate.store.files` — :class:`StoreError`, :class:`StoreUnwritable`, and the
  file and host primitives (write-all, pread, folder fsync, host identity, pid liveness);
* :mod:`~structablate.store.shard` — the shard format on disk (header, tables, values, CRCs),
  :class:`Shard`, and the 32-byte keys (:func:`digest`, :func:`key_from_hex`);
* :mod:`~structablate.store.lock` — :class:`StageLock`: one live holder per stage and cache,
  across nodes, with heartbeats and stale-lock breaking;
* :mod:`~structablate.store.layout` — the folder: its ``STORE.json`` marker, subfolders and
  file names, and the checks on opening it (:class:`Folder`);
* :mod:`~structablate.store.index` — the committed shards a store knows and the lookup of a
  key's shard and row (:class:`ShardIndex`);
* :mod:`~structablate.store.commit` — a writer's buffer and the commit of a shard;
* :mod:`~structablate.store.maintenance` — garbage collection, quarantine, verification and
  the merging of shards;
* :mod:`~structablate.store.folder` — :class:`Store`: one folder of shards (reading, writing,
  quarantine, garbage collection, compaction, built from the four above) and its
  :class:`StoreSettings`;
* :mod:`~structablate.store.typed` — :class:`VectorStore` (the embedding cache),
  :class:`JsonStore` (the LLM cache) and :class:`ScoreStore` (the reranker score cache);
* :mod:`~structablate.store.sqlite` — import of the SQLite caches of earlier versions;
* ``python -m structablate.store`` (:mod:`~structablate.store.__main__`) — ``info``,
  ``verify``, ``gc``, ``compact`` and ``import-sqlite`` (docs/cache.md).
"""
