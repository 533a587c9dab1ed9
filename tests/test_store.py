"""The shard store behind every cache: concurrency across processes, crashes, corruption,
unwritable folders, garbage, compaction and the stage lock.

Concurrency is exercised with real, separate Python processes (``subprocess``), never threads:
writers commit shards while readers merge them, one writer is killed in the middle of writing a
shard and another at a random moment.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from structablate.store.__main__ import main
from structablate.store.files import StoreError, StoreUnwritable
from structablate.store.folder import Store, StoreSettings
from structablate.store.lock import LockSettings, StageLock, StageLocked
from structablate.store.shard import digest
from structablate.store.sqlite import import_sqlite
from structablate.store.typed import JsonStore, ScoreStore, VectorStore

SRC = str(Path(__file__).resolve().parents[1] / "src")
DIM = 96


def vec(i: int) -> np.ndarray:
    return np.arange(DIM, dtype=np.float32) * 0.5 + i


def key(i: int) -> bytes:
    return digest("k", str(i))


def run_py(code: str, *args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def shards(root: Path) -> list[Path]:
    return sorted((root / "shards").glob("*.shard"))


def temps(root: Path) -> list[Path]:
    return sorted((root / "shards").glob(".*.tmp"))


# ------------------------------------------------------------------------------------------
# basics


def test_roundtrip_reopen_and_insert_or_ignore(tmp_path):
    root = tmp_path / "v"
    with VectorStore(root) as s:
        assert s.put_vectors((key(i), vec(i)) for i in range(100)) == 100
        assert s.put_vectors([(key(5), vec(999))]) == 0  # present: ignored, like INSERT OR IGNORE
        assert np.array_equal(s.get_vectors([key(7)])[key(7)], vec(7))  # visible before commit
        assert shards(root) == []  # nothing committed yet (flush policy)
        s.flush()
        assert len(shards(root)) == 1
        assert s.put_vectors([(key(5), vec(999))]) == 0  # committed: still ignored
    got = VectorStore(root, readonly=True).get_vectors([key(i) for i in range(-5, 105)])
    assert sorted(got) == sorted(key(i) for i in range(100))
    assert all(np.array_equal(got[key(i)], vec(i)) for i in range(100))
    assert len(VectorStore(root)) == 100
    # another process's view: the same records
    p = run_py(textwrap.dedent("""
        import sys
        from structablate.store.shard import digest
        from structablate.store.typed import VectorStore
        s = VectorStore(sys.argv[1], readonly=True)
        print(len(s), s.get_vectors([digest("k", "42")])[digest("k", "42")][:2].tolist())
    """), root)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert out.split(maxsplit=1) == ["100", "[42.0, 42.5]\n"]


def test_json_and_score_stores(tmp_path):
    with JsonStore(tmp_path / "j") as j:
        j.put_json(digest("a"), {"text": "ä", "n": [1, 2]})
    assert JsonStore(tmp_path / "j").get_json(digest("a")) == {"text": "ä", "n": [1, 2]}
    k = ScoreStore.key("bge-reranker-v2-m3", "bfloat16", "what is x?", "x is y.")
    assert k != ScoreStore.key("bge-reranker-v2-m3", "float32", "what is x?", "x is y.")
    assert k != ScoreStore.key("bge-reranker-v2-m3", "bfloat16", "what is x?", "x is y")
    score = -3.141592653589793e-7
    with ScoreStore(tmp_path / "s") as s:
        s.put_scores([(k, score)])
    assert ScoreStore(tmp_path / "s").get_scores([k]) == {k: score}  # exact float64
    with pytest.raises(StoreError, match="give each cache its own folder"):
        VectorStore(tmp_path / "j")
    assert digest("a", "bc") != digest("ab", "c")


def test_the_shard_bytes_on_disk_follow_the_documented_layout(tmp_path):
    """Caches written by earlier releases must keep being read: a committed shard is exactly
    the layout of :mod:`structablate.store.shard`'s docstring, rebuilt here from struct and
    zlib alone, and a shard built that way by hand reads back."""
    import zlib

    def by_hand(records: list[tuple[bytes, bytes]], kind_code: int) -> bytes:
        records = sorted(records)
        n = len(records)
        tables = (b"".join(k for k, _ in records)
                  + b"".join(struct.pack("<I", len(v)) for _, v in records)
                  + b"".join(struct.pack("<I", zlib.crc32(k + v)) for k, v in records))
        data_off = 48 + 40 * n
        size = data_off + sum(len(v) for _, v in records)
        head = struct.pack("<8sHHIQQQI", b"SBSTORE\x01", 1, kind_code, 0, n, data_off, size,
                           zlib.crc32(tables))
        return head + struct.pack("<I", zlib.crc32(head)) + tables + b"".join(
            v for _, v in records)

    recs = [(key(i), vec(i).astype("<f4").tobytes()) for i in (3, 1, 2)]
    with VectorStore(tmp_path / "v") as s:
        s.put_many(recs)
    (shard,) = shards(tmp_path / "v")
    assert shard.read_bytes() == by_hand(recs, 1)
    assert json.loads((tmp_path / "v" / "STORE.json").read_text()) == {
        "format": "structablate-store", "kind": "vectors", "version": 1}
    # a float64 shard made by hand (as an earlier release wrote it) is read by today's code
    root = tmp_path / "s"
    (root / "shards").mkdir(parents=True)
    (root / "STORE.json").write_text('{"format": "structablate-store", "kind": "float64", '
                                     '"version": 1}\n')
    k = ScoreStore.key("m", "float32", "q", "c")
    (root / "shards" / "1_host_1_00000000_00000000_000001.shard").write_bytes(
        by_hand([(k, struct.pack("<d", 0.25)), (key(9), struct.pack("<d", -1.5))], 3))
    assert ScoreStore(root, readonly=True).get_scores([k, key(9)]) == {k: 0.25, key(9): -1.5}


def test_the_maintenance_command_runs_as_a_module(tmp_path):
    """``python -m structablate.store`` (docs/cache.md) is the package's entry point."""
    with JsonStore(tmp_path / "j") as j:
        j.put_json(digest("a"), {"n": 1})
        j.put_json(digest("b"), {"n": 2})
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-m", "structablate.store", "info",
                          str(tmp_path / "j")], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert (info["kind"], info["shards"], info["records"]) == ("json", 1, 2)


def test_flush_policy_and_umask(tmp_path):
    old = os.umask(0o022)
    try:
        s = VectorStore(tmp_path / "v", settings=StoreSettings(flush_records=10))
        s.put_vectors((key(i), vec(i)) for i in range(9))
        assert shards(tmp_path / "v") == []
        s.put_vectors([(key(9), vec(9))])
        assert len(shards(tmp_path / "v")) == 1  # the 10th record commits the shard
        t = VectorStore(tmp_path / "t", settings=StoreSettings(flush_s=0.0))
        t.put_vectors([(key(1), vec(1))])
        assert len(shards(tmp_path / "t")) == 1  # flush_s=0: every put commits
        # a research group sharing the results folder can read the shards (umask respected)
        assert shards(tmp_path / "v")[0].stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(old)


def test_duplicate_keys_resolve_by_content_not_by_timing(tmp_path):
    root = tmp_path / "v"
    a = Store(root)
    b = Store(root)
    a.put(key(1), b"zzz")
    a.flush()
    b.put(key(1), b"aaa")  # b has not seen a's shard yet: it commits its own copy
    b.flush()
    assert len(shards(root)) == 2
    for reader in (Store(root, readonly=True), a, b):
        reader.refresh()
        assert reader.get(key(1)) == b"aaa"
    Store(root).compact()
    assert len(shards(root)) == 1 and Store(root).get(key(1)) == b"aaa"


# ------------------------------------------------------------------------------------------
# many processes at once, two of them killed


_WRITER = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import structablate.store.files as files
    from structablate.store.shard import digest
    from structablate.store.typed import VectorStore
    root, lo, hi, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    s = VectorStore(root)
    commits = 0
    real_write_all = files.write_all

    def torn(fd, chunks):  # half of a shard reaches the disk, then the process is killed
        data = b"".join(bytes(c) for c in chunks)
        real_write_all(fd, [data[: len(data) // 2]])
        print("TORN", flush=True)
        time.sleep(120)

    for b in range(lo, hi, 25):
        if mode == "torn" and commits == 3:
            files.write_all = torn
        s.put_vectors((digest("k", str(i)), np.arange(@DIM@, dtype=np.float32) * 0.5 + i)
                      for i in range(b, min(b + 25, hi)))
        s.flush()
        commits += 1
        print("C", min(b + 25, hi) - 1, flush=True)  # everything up to here is committed
        time.sleep(0.01)
    s.close()
    print("DONE", flush=True)
""").replace("@DIM@", str(DIM))

_READER = textwrap.dedent("""
    import os, sys
    import numpy as np
    from structablate.store.shard import digest
    from structablate.store.typed import VectorStore
    root, n_universe, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    want = {digest("k", str(i)): i for i in range(n_universe)}
    s = VectorStore(root, readonly=True)
    rounds = seen = 0
    while not os.path.exists(stop) or rounds < 3:
        s.refresh()
        keys = s.keys()
        got = s.get_vectors(keys)
        for k in keys:
            if k not in want:
                sys.exit(f"unknown key {k.hex()}")
            if k not in got:
                sys.exit(f"listed key {k.hex()} has no value")
            if not np.array_equal(got[k], np.arange(@DIM@, dtype=np.float32) * 0.5 + want[k]):
                sys.exit(f"wrong value for record {want[k]}")
        seen = max(seen, len(keys))
        rounds += 1
    print("R", rounds, seen, len(s.quarantined), flush=True)
""").replace("@DIM@", str(DIM))


def test_many_processes_write_and_read_at_once_one_killed_mid_write(tmp_path):
    root = tmp_path / "cache"
    stop = tmp_path / "stop"
    n = 700
    VectorStore(root).close()
    readers = [run_py(_READER, root, n, stop) for _ in range(2)]
    time.sleep(0.3)
    torn = run_py(_WRITER, root, 0, 250, "torn")
    killed = run_py(_WRITER, root, 100, 400, "plain")
    plain = [run_py(_WRITER, root, lo, lo + 250, "plain") for lo in (250, 450)]
    try:
        torn_lines = []
        while (line := torn.stdout.readline()) and line.strip() != "TORN":
            torn_lines.append(line)
        assert line.strip() == "TORN", torn.stderr.read()
        killed_lines = [killed.stdout.readline() for _ in range(3)]
        # Every other writer has opened its store (it printed its first commit) before the torn
        # writer dies: opening a writer collects a dead writer's temporary file, so a writer
        # that a loaded machine started late would otherwise remove the evidence checked below.
        plain_first = [p.stdout.readline() for p in plain]
        assert all(x.startswith(("C ", "DONE")) for x in plain_first), plain_first
        time.sleep(random.uniform(0.0, 0.05))  # somewhere inside put/flush/sleep
    finally:
        torn.send_signal(signal.SIGKILL)
        killed.send_signal(signal.SIGKILL)
    torn.wait(timeout=60)
    killed_lines += killed.stdout.readlines()
    killed.wait(timeout=60)
    assert torn.returncode == killed.returncode == -signal.SIGKILL
    # not communicate(): it reads the pipe's descriptor and would miss what readline buffered
    outs = [(first + p.stdout.read(), p.stderr.read()) for first, p in zip(plain_first, plain,
                                                                           strict=True)]
    for p in plain:
        p.wait(timeout=120)
    for p, (out, err) in zip(plain, outs, strict=True):
        assert p.returncode == 0 and out.strip().endswith("DONE"), err
    stop.touch()
    for r in readers:
        out, err = r.communicate(timeout=120)
        assert r.returncode == 0, err
        _, rounds, seen, quarantined = out.split()
        assert int(rounds) >= 3 and int(seen) > 0 and quarantined == "0"

    def committed(lines, lo):
        last = [int(x.split()[1]) for x in lines if x.startswith("C ")]
        return set(range(lo, last[-1] + 1)) if last else set()

    expected = (committed(torn_lines, 0) | committed(killed_lines, 100)
                | set(range(250, 700)))
    assert len(committed(torn_lines, 0)) == 75  # three shards, the fourth was torn
    store = VectorStore(root, readonly=True)
    keys = set(store.keys())
    universe = {key(i): i for i in range(n)}
    assert keys <= set(universe)  # nothing but whole records
    assert {key(i) for i in expected} <= keys  # nothing committed was lost
    got = store.get_vectors(sorted(keys))
    assert all(np.array_equal(got[k], vec(universe[k])) for k in keys)
    assert not (root / "quarantine").exists() and store.quarantined == []
    # the torn shard is a temporary file: invisible to readers, garbage for the next writer
    leftovers = temps(root)
    assert leftovers, "the torn writer left no temporary file"
    writer = VectorStore(root)  # opening a writer collects garbage of dead writers on this host
    assert temps(root) == [] and set(writer.keys()) == keys


# ------------------------------------------------------------------------------------------
# corruption


def _store_with_two_shards(root: Path) -> tuple[Path, Path]:
    s = VectorStore(root)
    s.put_vectors((key(i), vec(i)) for i in range(50))
    first = s.flush()
    s.put_vectors((key(i), vec(i)) for i in range(50, 100))
    second = s.flush()
    s.close()
    return first, second


def test_a_truncated_shard_is_quarantined_with_a_warning_and_its_records_are_missing(
        tmp_path, caplog):
    root = tmp_path / "v"
    first, second = _store_with_two_shards(root)
    data = first.read_bytes()
    first.write_bytes(data[: len(data) - 1000])  # e.g. a copy cut short by a full disk
    with caplog.at_level(logging.WARNING, logger="structablate.store"):
        s = VectorStore(root)
    assert s.quarantined == [str(first)]
    assert not first.exists() and (root / "quarantine" / first.name).exists()
    msg = caplog.text
    assert str(first) in msg and "truncated" in msg and "recomputed" in msg
    got = s.get_vectors([key(i) for i in range(100)])
    assert sorted(got) == sorted(key(i) for i in range(50, 100))
    s.put_vectors((key(i), vec(i)) for i in range(50))  # the caller recomputes them
    s.close()
    assert len(VectorStore(root, readonly=True).get_vectors([key(i) for i in range(100)])) == 100


def test_a_flipped_byte_fails_its_checksum_when_read(tmp_path, caplog):
    root = tmp_path / "v"
    first, _ = _store_with_two_shards(root)
    raw = bytearray(first.read_bytes())
    raw[-10] ^= 0xFF  # inside the last record's value; header and tables still check out
    first.write_bytes(bytes(raw))
    s = VectorStore(root)
    assert s.quarantined == []
    with caplog.at_level(logging.WARNING, logger="structablate.store"):
        got = s.get_vectors([key(i) for i in range(100)])
    assert "fails its checksum" in caplog.text and str(first) in caplog.text
    assert sorted(got) == sorted(key(i) for i in range(50, 100))  # never the corrupt value
    assert (root / "quarantine" / first.name).exists()


@pytest.mark.parametrize("damage", ["garbage", "empty", "header"])
def test_other_damage_is_quarantined(tmp_path, damage):
    root = tmp_path / "v"
    first, _ = _store_with_two_shards(root)
    if damage == "garbage":
        first.write_bytes(b"this is not a shard" * 10)
    elif damage == "empty":
        first.write_bytes(b"")
    else:
        raw = bytearray(first.read_bytes())
        struct.pack_into("<Q", raw, 16, 49)  # the record count
        first.write_bytes(bytes(raw))
    s = VectorStore(root)
    assert s.quarantined == [str(first)] and len(s) == 50


def test_verify_reads_every_record(tmp_path):
    root = tmp_path / "v"
    first, _ = _store_with_two_shards(root)
    raw = bytearray(first.read_bytes())
    raw[-1] ^= 1
    first.write_bytes(bytes(raw))
    assert main(["verify", str(root)]) == 0
    assert (root / "quarantine" / first.name).exists() and len(shards(root)) == 1


# ------------------------------------------------------------------------------------------
# folders that cannot be written


_UNPRIVILEGED = textwrap.dedent("""
    import os, sys
    from structablate.store.files import StoreUnwritable
    from structablate.store.shard import digest
    from structablate.store.typed import VectorStore
    import numpy as np
    if os.geteuid() == 0:  # root writes anywhere: act as nobody (file checks use the euid)
        os.setegid(65534); os.seteuid(65534)
    path, mode = sys.argv[1], sys.argv[2]
    if mode == "write":
        try:
            VectorStore(path)
        except StoreUnwritable as exc:
            print("ERROR", exc)
        else:
            print("OPENED")
    else:
        s = VectorStore(path, readonly=True)
        print("READ", len(s.get_vectors([digest("k", str(i)) for i in range(10)])))
""")


@pytest.fixture
def shared_tmp():
    d = Path(tempfile.mkdtemp(prefix="store-ro-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    for p in d.rglob("*"):
        if p.is_dir():
            p.chmod(0o755)
    shutil.rmtree(d)


@pytest.mark.parametrize("exists", [True, False])
def test_an_unwritable_folder_is_named_with_what_to_do(shared_tmp, exists):
    root = shared_tmp / "cache" / "embeddings"
    if exists:
        with VectorStore(root) as s:
            s.put_vectors((key(i), vec(i)) for i in range(10))
    else:
        (shared_tmp / "cache").mkdir()
    for p in [shared_tmp / "cache", *(shared_tmp / "cache").rglob("*")]:
        if p.is_dir():
            p.chmod(0o555)
    out, err = run_py(_UNPRIVILEGED, root, "write").communicate(timeout=60)
    assert out.startswith("ERROR"), err
    assert str(root) in out and "not writable" in out and "chmod" in out
    assert "deleting or moving" in out
    if exists:  # reading (replay) still works from a read-only folder
        out, err = run_py(_UNPRIVILEGED, root, "read").communicate(timeout=60)
        assert out.strip() == "READ 10", err


def test_a_full_disk_while_committing_names_the_path(tmp_path, monkeypatch):
    import errno

    import structablate.store.files as files

    s = VectorStore(tmp_path / "v")
    s.put_vectors([(key(1), vec(1))])

    def full(fd, chunks):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "write_all", full)
    with pytest.raises(StoreUnwritable, match="free space") as err:
        s.flush()
    assert str(tmp_path / "v") in str(err.value)
    assert temps(tmp_path / "v") == [] and shards(tmp_path / "v") == []  # nothing half-written
    monkeypatch.undo()
    s.flush()  # the records were kept: a later commit succeeds
    assert len(VectorStore(tmp_path / "v")) == 1


def test_an_sqlite_file_of_earlier_versions_is_refused_and_can_be_imported(tmp_path):
    old = tmp_path / "embeddings.sqlite"
    con = sqlite3.connect(old)
    con.execute("CREATE TABLE vectors (key BLOB PRIMARY KEY, dim INTEGER, data BLOB)")
    con.executemany("INSERT INTO vectors VALUES (?, ?, ?)",
                    [(key(i), DIM, vec(i).tobytes()) for i in range(30)])
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="import-sqlite") as err:
        VectorStore(old)
    assert str(old) in str(err.value) and "delete it" in str(err.value)
    assert main(["import-sqlite", str(old), str(tmp_path / "embeddings")]) == 0
    got = VectorStore(tmp_path / "embeddings").get_vectors([key(i) for i in range(30)])
    assert all(np.array_equal(got[key(i)], vec(i)) for i in range(30))
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(old.read_bytes()[:3000])  # truncated: "database disk image is malformed"
    with pytest.raises(StoreError, match="damaged") as err:
        import_sqlite(broken, tmp_path / "x")
    assert str(broken) in str(err.value)


# ------------------------------------------------------------------------------------------
# garbage and compaction


def test_gc_removes_temporary_files_of_dead_writers_only(tmp_path):
    root = tmp_path / "v"
    store = VectorStore(root)
    p = run_py("import os; print(os.getpid())")
    dead_pid = int(p.communicate(timeout=60)[0])
    from structablate.store.files import host_key

    here = host_key()
    dead = root / "shards" / f".1_host_{dead_pid}_{here}_0123abcd_000001.shard.tmp"
    alive = root / "shards" / f".1_host_{os.getppid()}_{here}_0123abcd_000001.shard.tmp"
    foreign = root / "shards" / f".1_other_{dead_pid}_ffffffff_0123abcd_000001.shard.tmp"
    old_foreign = root / "shards" / f".1_other_{dead_pid}_eeeeeeee_0123abcd_000001.shard.tmp"
    for f in (dead, alive, foreign, old_foreign):
        f.write_bytes(b"partial")
    os.utime(old_foreign, (time.time() - 7200, time.time() - 7200))
    removed = set(store.gc())
    assert removed == {dead, old_foreign}
    assert alive.exists() and foreign.exists()


def test_compaction_while_a_reader_holds_the_old_shards(tmp_path):
    root = tmp_path / "v"
    w = VectorStore(root, settings=StoreSettings(flush_records=10, merge_own_min_shards=99))
    w.put_vectors((key(i), vec(i)) for i in range(95))
    w.close()
    assert len(shards(root)) == 10
    reader = VectorStore(root, readonly=True)  # has loaded the tables of the ten shards
    assert main(["compact", str(root)]) == 0
    assert len(shards(root)) == 1
    got = reader.get_vectors([key(i) for i in range(95)])  # its shards vanished: it looks again
    assert len(got) == 95 and all(np.array_equal(got[key(i)], vec(i)) for i in range(95))


def test_a_writer_merges_its_own_small_shards_on_close(tmp_path):
    root = tmp_path / "j"
    s = JsonStore(root, settings=StoreSettings(flush_records=1, merge_own_min_shards=4))
    for i in range(6):
        s.put_json(key(i), {"i": i})
    assert len(shards(root)) == 6
    s.close()
    assert len(shards(root)) == 1
    assert [JsonStore(root).get_json(key(i)) for i in range(6)] == [{"i": i} for i in range(6)]


# ------------------------------------------------------------------------------------------
# the stage lock


_HOLDER = textwrap.dedent("""
    import sys, time
    from structablate.store.lock import LockSettings, StageLock
    lock = StageLock(sys.argv[1], settings=LockSettings(heartbeat_s=0.2), label="stage x")
    lock.acquire()
    print("HELD", flush=True)
    time.sleep(120)
""")


def test_a_live_holder_is_named_and_a_killed_one_is_stale(tmp_path):
    path = tmp_path / "locks" / "contexts.lock"
    holder = run_py(_HOLDER, path)
    try:
        assert holder.stdout.readline().strip() == "HELD", holder.stderr.read()
        with pytest.raises(StageLocked) as err:
            StageLock(path, settings=LockSettings(wait_s=0), label="LLM stage 'contexts'"
                      ).acquire()
        msg = str(err.value)
        assert f"pid {holder.pid}" in msg and f"host {socket.gethostname()}" in msg
        assert str(path) in msg and f"kill {holder.pid}" in msg
        assert err.value.holder["pid"] == holder.pid
        # the holder's heartbeat keeps the file fresh: an aged mtime is renewed (waited for,
        # not timed: a loaded machine may run the heartbeat thread late)
        os.utime(path, (time.time() - 100, time.time() - 100))
        deadline = time.monotonic() + 60
        while time.time() - path.stat().st_mtime > 50:
            assert time.monotonic() < deadline, "the heartbeat never renewed the lock file"
            time.sleep(0.05)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    lock = StageLock(path)
    lock.acquire()  # same host, pid dead: stale, broken with a warning
    assert lock.held and lock.broken[0]["pid"] == holder.pid
    assert json.loads(path.read_text())["pid"] == os.getpid()
    lock.release()
    assert not path.exists()


def _foreign_lock(path: Path, age_s: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pid": 4242, "host": "node17", "host_identity": "node17|b|1",
                                "started": "2026-01-01T00:00:00Z", "token": "t"}))
    os.utime(path, (time.time() - age_s, time.time() - age_s))


def test_a_lock_from_another_host_is_stale_only_without_heartbeat(tmp_path):
    path = tmp_path / "l.lock"
    _foreign_lock(path, age_s=5)
    with pytest.raises(StageLocked, match="pid 4242 on host node17") as err:
        StageLock(path, settings=LockSettings(stale_after_s=60, wait_s=0)).acquire()
    assert "on node17: kill 4242" in str(err.value)
    _foreign_lock(path, age_s=120)
    lock = StageLock(path, settings=LockSettings(stale_after_s=60)).acquire()
    assert lock.broken[0]["host"] == "node17"
    lock.release()


def test_a_holder_that_exits_without_release_unlocks(tmp_path):
    path = tmp_path / "l.lock"
    code = ("import sys; from structablate.store.lock import StageLock; "
            "StageLock(sys.argv[1]).acquire(); raise SystemExit('crash')")
    out, err = run_py(code, path).communicate(timeout=60)
    assert "crash" in err and not path.exists()  # released at exit, no stale lock left


def test_a_rerun_outwaits_the_lock_of_a_holder_killed_on_another_node(tmp_path):
    path = tmp_path / "l.lock"
    _foreign_lock(path, age_s=1.0)  # its heartbeat stops now: the holder was killed
    t0 = time.monotonic()
    lock = StageLock(path, settings=LockSettings(stale_after_s=1.5, wait_s=120)).acquire()
    assert lock.held and lock.broken[0]["host"] == "node17"
    assert time.monotonic() - t0 > 0.3  # it waited for the heartbeat to go stale (no upper
    # bound: how late the waiter wakes on a loaded machine is not a property of the lock)
    lock.release()


def test_waiting_for_a_holder_that_finishes(tmp_path):
    path = tmp_path / "l.lock"
    first = StageLock(path).acquire()
    second = StageLock(path, settings=LockSettings(wait_s=120))
    import threading

    threading.Timer(0.3, first.release).start()
    t0 = time.monotonic()
    second.acquire()
    assert second.held and not first.held and time.monotonic() - t0 > 0.2  # it waited
    second.release()


def test_an_unreadable_lock_file_is_held_until_it_ages(tmp_path):
    path = tmp_path / "l.lock"
    path.write_bytes(b"")  # a lock being written by O_EXCL on a filesystem without links
    with pytest.raises(StageLocked):
        StageLock(path, settings=LockSettings(stale_after_s=30, wait_s=0)).acquire()
    os.utime(path, (time.time() - 60, time.time() - 60))
    StageLock(path, settings=LockSettings(stale_after_s=30)).acquire().release()


def test_a_forked_child_never_reuses_its_parents_shard_names(tmp_path):
    s = Store(tmp_path / "b")
    s.put(key(1), b"one")
    pid = os.fork()
    if pid == 0:  # the child commits the copy of the buffer it inherited, plus its own record
        try:
            s.put(key(2), b"two")
            s.flush()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    s.put(key(3), b"three")
    s.flush()
    assert len(shards(tmp_path / "b")) == 2
    fresh = Store(tmp_path / "b")
    assert [fresh.get(key(i)) for i in (1, 2, 3)] == [b"one", b"two", b"three"]


def test_a_store_hands_out_stage_locks_in_its_folder(tmp_path):
    s = VectorStore(tmp_path / "v")
    with s.stage_lock("embed/qasper/minilm/G3") as lock:
        assert lock.path.parent == tmp_path / "v" / "locks" and lock.path.exists()
        with pytest.raises(StageLocked, match="embed/qasper/minilm/G3"):
            s.stage_lock("embed/qasper/minilm/G3", settings=LockSettings(wait_s=0)).acquire()
    assert not lock.path.exists()


def test_a_folder_with_other_files_is_not_taken_for_a_cache(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "documents.parquet").write_bytes(b"x")
    with pytest.raises(StoreError, match="not a cache") as err:
        VectorStore(tmp_path / "results", setting="`results:`")
    assert "`results:`" in str(err.value) and "documents.parquet" in str(err.value)
    assert not (tmp_path / "results" / "shards").exists()


def test_a_closing_writer_merges_the_small_shards_killed_jobs_left(tmp_path):
    root = tmp_path / "j"
    for i in range(5):  # five "killed" writers, each left two small shards
        s = JsonStore(root)
        s.put_json(key(2 * i), {"i": 2 * i})
        s.flush()
        s.put_json(key(2 * i + 1), {"i": 2 * i + 1})
        s.flush()
        s._closed = True  # as if killed: no merge on close
    assert len(shards(root)) == 10
    last = JsonStore(root, settings=StoreSettings(compact_min_shards=10))
    last.close()
    assert len(shards(root)) == 1
    assert [JsonStore(root).get_json(key(i)) for i in range(10)] == [{"i": i} for i in range(10)]
    assert not (root / "locks" / "compact.lock").exists()
