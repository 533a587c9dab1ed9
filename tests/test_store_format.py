"""The store's files do not change with its code: a fixed sequence of writes gives the same
bytes as the store of commit 6ab0164 (one ~700-line class before it was split by concern into
layout, index, commit and maintenance), and a folder that store wrote is read and extended.

The digests below were taken by running :func:`write_sequence` and :func:`extend_v1` with the
package of 6ab0164 on ``PYTHONPATH``. Shard names carry the commit time, host, pid and a
random token, unique per writer by design, so a shard is named here by its folder and its
writer's commit count only; every file's bytes are compared.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import numpy as np

from structablate.store.folder import Store, StoreSettings
from structablate.store.shard import digest
from structablate.store.typed import JsonStore, ScoreStore, VectorStore


def write_sequence(root: Path) -> None:
    """Four stores of the four kinds written, reopened, extended and compacted."""
    small = StoreSettings(flush_records=50, merge_own_min_shards=4, compact_min_shards=1000)
    with VectorStore(root / "v", settings=small) as s:
        for b in range(0, 300, 30):
            s.put_vectors((digest("k", str(i)), np.arange(16, dtype=np.float32) + i)
                          for i in range(b, b + 30))
            s.flush()
        s.put_vectors([(digest("k", "5"), np.zeros(16, dtype=np.float32))])  # present: kept
    with VectorStore(root / "v", settings=small) as s:
        s.put_vectors((digest("k", str(i)), np.arange(16, dtype=np.float32) * 2 + i)
                      for i in range(250, 400))
        s.compact()
    with JsonStore(root / "j") as s:
        for i in range(20):
            s.put_json(digest("j", str(i)), {"i": i, "text": "é" * i, "n": [i, {"b": 1, "a": 2}]})
    with ScoreStore(root / "f") as s:
        s.put_scores((ScoreStore.key("m", "float32", f"q{i}", f"c{i}"), i / 7) for i in range(40))
    with Store(root / "b", settings=StoreSettings(flush_records=7)) as s:
        s.put_many((digest("b", str(i)), bytes([i]) * i) for i in range(30))
        s.compact(names=[p.name for p in s.shard_paths()][:3])


def file_digests(root: Path) -> list[str]:
    """``<path> <sha256>`` of every file under ``root``, a shard's name cut to ``<seq>.shard``
    (its commit count), sorted."""
    out = []
    for p in root.rglob("*"):
        if p.is_file():
            rel = p.relative_to(root).as_posix()
            rel = re.sub(r"\d{19}_.*_(\d{6})\.shard$", r"\1.shard", rel)
            out.append(f"{rel} {hashlib.sha256(p.read_bytes()).hexdigest()}")
    return sorted(out)


MAIN_SEQUENCE = [
    "b/STORE.json 14aef706782c9b933bb3cb9fb8abceee83ce4f57317f6da78fafb801937cedca",
    "b/shards/000004.shard aebcaea35f0f3e29b991e5915e61a57bab21885cb05a8c83e7a73f89210fb543",
    "b/shards/000005.shard 6502585f35c4737d7b0cb73cf0d6b38a97a6bf4ce3e1580e8740aae5da8f1770",
    "b/shards/000006.shard 537eca07a31ad1c39282d521ef409e20a3284b543426abe13d85a897e7d0ba52",
    "f/STORE.json 6c769ac00ce2c921456401e8732dc4d651dff27bb598f527014e935a9184cc8f",
    "f/shards/000001.shard 25cda80028f0c6455ebd061dc51b98b3f8474611fe272b9cf5ca8880a9c0514d",
    "j/STORE.json e5b2209b98965a3b1b40b14b28069f7847e7c752ebd3b7276718f5a45d26ec66",
    "j/shards/000001.shard 059e9eba389fcb3c60f2a7b1832e462b9f25ac4e6d6f8843ff71dd81279032c3",
    "v/STORE.json ec20a032d0fe31a3a2fe738432925b647428f0c533aae9043382c04dfce96ec9",
    "v/shards/000003.shard 7ff4247f53e43d722f5230afe0f84440c2bd8846697a7e5a09bc65c64302bb0f",
]
""":func:`file_digests` of :func:`write_sequence` under the store of 6ab0164."""


def test_the_same_writes_give_the_same_bytes_as_before_the_split(tmp_path):
    write_sequence(tmp_path)
    assert file_digests(tmp_path) == MAIN_SEQUENCE


def vec(i: float) -> np.ndarray:
    return np.arange(4, dtype=np.float32) * 0.25 + i


V1_VECTORS = {
    "STORE.json": (
        "eyJmb3JtYXQiOiAic3RydWN0YWJsYXRlLXN0b3JlIiwgImtpbmQiOiAidmVjdG9ycyIsICJ2ZXJzaW9uIjogMX0K"),
    "shards/0000000000000000001_fixture_1_00000000_00000001_000001.shard": (
        "U0JTVE9SRQEBAAEAAAAAAAQAAAAAAAAA0AAAAAAAAAAQAQAAAAAAAJ/rASbUkjFPHGNAm2FpGi0DUrlPV9uWB3kJ"
        "CxhphA94rCZ2NPLd5Ek0dgmOngPI3R+F5FyqwU59CIw2AKXY8Xm4nXiEtRKmv5amNJAnsi1yeK6rmUuaK+J1ZdOd"
        "9WtjmwcPd6fLMHkR46qJHVFmgyA4Gz5jqPdIJaqXcqLV+rvJhOohN+ZNtjsQAAAAEAAAABAAAAAQAAAAsOQdwWWT"
        "4mksR49lPtEkqQAAAAAAAIA+AAAAPwAAQD8AAABAAAAQQAAAIEAAADBAAABAQAAAUEAAAGBAAABwQAAAgD8AAKA/"
        "AADAPwAA4D8="),
    "shards/0000000000000000002_fixture_2_00000000_00000002_000001.shard": (
        "U0JTVE9SRQEBAAEAAAAAAAMAAAAAAAAAqAAAAAAAAADYAAAAAAAAAIkr+XHCrLBDCG49NatFIf4aOqM3Hw9wqWtX"
        "ytc9O1R1dutqeEB7BRp4jcpFOf49R4KZVdMUgYreLImyGAEDhXr7jS/l2cEatJamNJAnsi1yeK6rmUuaK+J1ZdOd"
        "9WtjmwcPd6fLMHkREAAAABAAAAAQAAAAA33dLvGwtv+uUUKdAACgQAAAqEAAALBAAAC4QAAAgEAAAIhAAACQQAAA"
        "mEAAAAA/AABAPwAAgD8AAKA/"),
}
"""A vector store folder written by the store of 6ab0164 (base64 of each file): keys
``digest("k", i)`` for i in 0..5 with :func:`vec` values in two shards, and i = 3 once more
with the value ``vec(0.5)``, smaller bytes, in the second."""


def extend_v1(root: Path) -> None:
    """Keys 4..9 put again (6..9 new), everything compacted into one shard."""
    with VectorStore(root, settings=StoreSettings(merge_own_min_shards=99)) as s:
        assert s.put_vectors((digest("k", str(i)), vec(i)) for i in range(4, 10)) == 4
        s.flush()
        assert s.compact() == (3, 1)


MAIN_EXTENDED = [
    "STORE.json ec20a032d0fe31a3a2fe738432925b647428f0c533aae9043382c04dfce96ec9",
    "shards/000002.shard 70509900955b5f1b83464077327384da6c073bcdebc3856e0facb6389f2a9abe",
]
""":func:`file_digests` of the :data:`V1_VECTORS` folder after :func:`extend_v1` under the
store of 6ab0164."""


def test_a_folder_written_before_the_split_reads_and_extends_the_same(tmp_path):
    root = tmp_path / "v"
    for rel, data in V1_VECTORS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(base64.b64decode(data))
    s = VectorStore(root, readonly=True)
    got = s.get_vectors(digest("k", str(i)) for i in range(8))
    assert sorted(got) == sorted(digest("k", str(i)) for i in range(6))
    for i in range(6):  # a key stored twice reads as its smallest value bytes
        assert np.array_equal(got[digest("k", str(i))], vec(0.5) if i == 3 else vec(i))
    extend_v1(root)
    assert file_digests(root) == MAIN_EXTENDED
    again = VectorStore(root, readonly=True).get_vectors(digest("k", str(i)) for i in range(10))
    assert len(again) == 10 and np.array_equal(again[digest("k", "3")], vec(0.5))
