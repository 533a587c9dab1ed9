"""The generation cache: keys, hits and misses, replay mode, and crash safety."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from structablate.llm.backends import Backend, Generation, Request
from structablate.llm.cache import CacheMiss, JsonlCache, StoreCache, cache_key, open_cache
from structablate.llm.client import LLMClient, client_from_config
from structablate.store.lock import LockSettings


class CountingBackend(Backend):
    """A deterministic backend that counts its calls (answer = 'echo:' + last message)."""

    name = "counting"

    def __init__(self):
        self.calls = 0

    def generate(self, request: Request) -> Generation:
        self.calls += 1
        return Generation(text="echo:" + request.messages[-1]["content"], prompt_tokens=3,
                          completion_tokens=2, seconds=0.01)


MSG = [{"role": "user", "content": "hello"}]


@pytest.mark.parametrize("suffix", [".jsonl", ""])
def test_hit_miss_and_persistence(tmp_path, suffix):
    path = tmp_path / f"cache{suffix}"
    backend = CountingBackend()
    client = LLMClient("m1", open_cache(path), backend=backend)
    assert client.chat(MSG) == "echo:hello"
    assert client.chat(MSG) == "echo:hello"
    assert backend.calls == 1
    assert client.stats.hits == 1 and client.stats.generated == 1
    # a different seed, token limit, model or schema is a different key
    client.chat(MSG, seed=7)
    client.chat(MSG, max_tokens=9)
    client.chat(MSG, json_schema={"type": "object"})
    assert backend.calls == 4
    LLMClient("m2", open_cache(path), backend=backend).chat(MSG)
    assert backend.calls == 5
    client.close()
    assert isinstance(open_cache(path), JsonlCache if suffix else StoreCache)

    # a fresh process-level view: everything replays from disk, the backend is never built
    def explode():
        raise AssertionError("backend must not be constructed on a full cache")

    again = LLMClient("m1", open_cache(path), backend_factory=explode)
    assert again.chat(MSG) == "echo:hello"
    assert again.chat(MSG, seed=7) == "echo:hello"
    assert not again.backend_loaded
    assert len(open_cache(path)) == 5


def test_key_is_backend_independent_and_canonical():
    a = LLMClient("m", None, backend=CountingBackend())
    b = LLMClient("m", None, backend=CountingBackend())
    r = a.request([{"content": "x", "role": "user"}], max_tokens=5)
    assert a.key(r) == b.key(b.request([{"role": "user", "content": "x"}], max_tokens=5))
    rec = a.request_record(r)
    assert "backend" not in json.dumps(rec)
    assert rec["sampling"] == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 5,
                               "seed": 20260710, "stop": []}
    assert cache_key({"b": 1, "a": 2}) == cache_key({"a": 2, "b": 1})


def test_replay_mode_miss_names_the_key(tmp_path):
    path = tmp_path / "rec.jsonl"
    LLMClient("m", open_cache(path), backend=CountingBackend()).chat(MSG)
    replay = client_from_config({"model": "m", "mode": "replay", "cache": str(path)})
    assert replay.chat(MSG) == "echo:hello"
    req = replay.request([{"role": "user", "content": "other"}])
    with pytest.raises(CacheMiss) as err:
        replay.generate(req)
    assert replay.key(req) in str(err.value) and "replay" in str(err.value)
    with pytest.raises(PermissionError):
        replay.cache.put("k", {}, {"text": ""})
    with pytest.raises(FileNotFoundError, match="replay"):
        client_from_config({"model": "m", "mode": "replay", "cache": str(tmp_path / "no.jsonl")})


def test_generate_many_dedupes_and_keeps_order(tmp_path):
    backend = CountingBackend()
    client = LLMClient("m", open_cache(tmp_path / "c"), backend=backend)
    client.chat([{"role": "user", "content": "b"}])
    reqs = [client.request([{"role": "user", "content": c}]) for c in "abca"]
    assert client.generate_many(reqs) == ["echo:a", "echo:b", "echo:c", "echo:a"]
    assert backend.calls == 3  # b was cached, a is generated once


_TORN_WRITER = textwrap.dedent("""
    import os, sys, time
    from structablate.llm.cache import JsonlCache
    path, n_full = sys.argv[1], int(sys.argv[2])
    cache = JsonlCache(path)
    for i in range(n_full):
        cache.put(f"k{i}", {"i": i}, {"text": "x" * 5000})
    real_write = os.write
    def torn_write(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))  # half a record reaches the disk
        print("TORN", flush=True)
        time.sleep(60)  # ... and the process is killed here
    os.write = torn_write
    cache.put("torn", {"i": -1}, {"text": "y" * 5000})
""")


def test_jsonl_killed_mid_write_leaves_readable_cache(tmp_path):
    path = tmp_path / "c.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", _TORN_WRITER, str(path), "3"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "TORN"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    raw = path.read_bytes()
    assert not raw.endswith(b"\n")  # the torn record really is on disk
    cache = JsonlCache(path)
    assert sorted(cache.keys()) == ["k0", "k1", "k2"]
    assert cache.get("k1")["response"]["text"] == "x" * 5000
    assert cache.get("torn") is None
    # a rerun appends after the torn tail and both old and new records read back
    cache.put("k3", {"i": 3}, {"text": "z"})
    fresh = JsonlCache(path)
    assert sorted(fresh.keys()) == ["k0", "k1", "k2", "k3"]
    assert fresh.skipped_lines == 1


_STORE_WRITER = textwrap.dedent("""
    import sys
    from structablate.llm.cache import StoreCache
    cache = StoreCache(sys.argv[1])
    i = 0
    while True:
        cache.put(f"k{i}", {"i": i}, {"text": "x" * 200000})
        if i % 3 == 2:
            cache.flush()  # committed: must survive the kill
            print("COMMITTED", i, flush=True)
        i += 1
""")


def test_store_cache_killed_mid_write_keeps_every_committed_record(tmp_path):
    path = tmp_path / "generations"
    proc = subprocess.Popen([sys.executable, "-c", _STORE_WRITER, str(path)],
                            stdout=subprocess.PIPE, text=True)
    committed = -1
    try:
        for _ in range(3):
            committed = int(proc.stdout.readline().split()[1])
        time.sleep(0.2)  # let it write more, so the kill lands inside put() or a shard write
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert committed >= 8
    cache = StoreCache(path)
    keys = cache.keys()
    assert {f"k{i}" for i in range(committed + 1)} <= set(keys)
    for k in keys:  # every visible record is complete
        assert cache.get(k)["response"]["text"] == "x" * 200000
    cache.put("after", {}, {"text": "ok"})
    cache.close()
    assert StoreCache(path, readonly=True).get("after")["response"]["text"] == "ok"


def test_an_sqlite_cache_of_earlier_versions_is_refused_with_the_import_command(tmp_path):
    import sqlite3

    from structablate.store.files import StoreError
    from structablate.store.sqlite import import_sqlite

    old = tmp_path / "generations.sqlite"
    con = sqlite3.connect(old)
    con.execute("CREATE TABLE generations (key TEXT PRIMARY KEY, request TEXT NOT NULL, "
                "response TEXT NOT NULL, created REAL NOT NULL)")
    k = cache_key({"model": "m"})
    con.execute("INSERT INTO generations VALUES (?, ?, ?, 0)",
                (k, json.dumps({"model": "m"}), json.dumps({"text": "old"})))
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="import-sqlite") as err:
        open_cache(old)
    assert str(old) in str(err.value)
    assert import_sqlite(old, tmp_path / "generations") == ("json", 1)
    assert open_cache(tmp_path / "generations").get(k)["response"]["text"] == "old"


class _Slow(CountingBackend):
    def generate(self, request):
        time.sleep(0.01)
        return super().generate(request)


def test_stage_lock_stops_a_second_generator_of_the_same_stage(tmp_path):
    from structablate.store.lock import StageLocked

    path = tmp_path / "generations"
    first = LLMClient("m", open_cache(path), backend=_Slow(), stage="contexts")
    assert first.chat(MSG) == "echo:hello"
    assert first.stage_lock is not None and first.stage_lock.held
    # another stage on the same cache, and hits of the same stage, need no lock
    other = LLMClient("m", open_cache(path), backend=CountingBackend(), stage="induction")
    other.chat([{"role": "user", "content": "other"}])
    # a second generator of the same stage: stopped before it generates, naming the holder
    second = LLMClient("m", open_cache(path), backend=CountingBackend(), stage="contexts",
                       lock_settings=LockSettings(wait_s=0))
    with pytest.raises(StageLocked) as err:
        second.chat([{"role": "user", "content": "new"}])
    msg = str(err.value)
    assert f"pid {__import__('os').getpid()}" in msg and socket.gethostname() in msg
    assert "contexts" in msg and str(first.cache.lock_path("contexts")) in msg
    assert second.backend_loaded and second._backend.calls == 0
    first.close()
    assert not first.cache.lock_path("contexts").exists()
    assert second.chat([{"role": "user", "content": "new"}]) == "echo:new"
    second.close()
    other.close()
    # replay takes no lock at all
    replay = client_from_config({"model": "m", "mode": "replay", "cache": str(path)},
                                stage="contexts")
    assert replay.chat(MSG) == "echo:hello" and replay.stage_lock is None


_ORPHAN = textwrap.dedent("""
    import sys, time
    from structablate.llm.backends import Backend, Generation
    from structablate.llm.cache import StoreCache
    from structablate.llm.client import LLMClient
    from structablate.store.folder import StoreSettings

    class Slow(Backend):
        name = "slow"
        def generate(self, request):
            time.sleep(0.05)
            print("GEN", flush=True)
            return Generation(text="echo:" + request.messages[-1]["content"])

    cache = StoreCache(sys.argv[1], settings=StoreSettings(flush_s=0.0))  # commit every record
    client = LLMClient("m", cache, backend=Slow(), stage="contexts")
    client.generate_many([client.request([{"role": "user", "content": f"p{i}"}])
                          for i in range(400)])
""")


def test_a_rerun_beside_an_orphan_generator_is_stopped_and_resumes_after_kill_9(tmp_path):
    from structablate.store.lock import StageLocked

    path = tmp_path / "generations"
    orphan = subprocess.Popen([sys.executable, "-c", _ORPHAN, str(path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        # six generations printed: the first five are committed (the client commits each
        # record before it asks for the next; the sixth may not be yet when the kill comes)
        for _ in range(6):
            assert orphan.stdout.readline().strip() == "GEN"
        backend = CountingBackend()
        rerun = LLMClient("m", open_cache(path), backend=backend, stage="contexts",
                          lock_settings=LockSettings(wait_s=0))
        reqs = [rerun.request([{"role": "user", "content": f"p{i}"}]) for i in range(400)]
        with pytest.raises(StageLocked, match=f"pid {orphan.pid} on host") as err:
            rerun.generate_many(reqs)
        assert f"kill {orphan.pid}" in str(err.value) and backend.calls == 0
    finally:
        orphan.send_signal(signal.SIGKILL)
        orphan.wait(timeout=30)
    # the orphan is gone: its lock is stale, and what it committed is not generated again
    rerun.cache.store.refresh()
    hits_before = rerun.stats.hits
    assert rerun.generate_many(reqs) == [f"echo:p{i}" for i in range(400)]
    assert rerun.stage_lock.broken[0]["pid"] == orphan.pid
    assert 5 <= 400 - backend.calls == rerun.stats.hits - hits_before
    rerun.close()


def test_a_client_whose_stage_lock_was_broken_stops_generating(tmp_path):
    """A holder frozen past the staleness limit loses its lock to a second generator; at its
    next generation it stops (StageLockLost) instead of generating beside it, one call or a
    batch alike, and what it committed before stays in the cache."""
    import os

    from structablate.store.lock import StageLock, StageLockLost

    path = tmp_path / "generations"
    backend = CountingBackend()
    first = LLMClient("m", open_cache(path), backend=backend, stage="contexts",
                      lock_settings=LockSettings(heartbeat_s=3600, stale_after_s=1))
    assert first.chat(MSG) == "echo:hello" and backend.calls == 1
    lock_path = first.cache.lock_path("contexts")
    os.utime(lock_path, (time.time() - 10, time.time() - 10))  # no heartbeat for 10 s
    second = StageLock(lock_path, settings=LockSettings(stale_after_s=1, wait_s=0)).acquire()
    with pytest.raises(StageLockLost, match="lost the lock"):
        first.chat([{"role": "user", "content": "new"}])
    with pytest.raises(StageLockLost):
        first.generate_many([first.request([{"role": "user", "content": f"q{i}"}])
                             for i in range(3)])
    assert backend.calls == 1  # nothing generated after the break
    first.close()  # releases nothing: the lock is the second holder's
    assert lock_path.exists()
    second.release()
    assert open_cache(path).get(cache_key(first.request_record(first.request(MSG)))) is not None
