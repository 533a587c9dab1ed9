"""A stage-lock holder learns that it lost its lock (broken as stale by another process, or
deleted) and stops: before, the heartbeat thread set a `lost` flag that nothing read, so two
holders could generate side by side."""

import json
import os
import time

import pytest

from structablate.store.lock import LockSettings, StageLock, StageLockLost


def test_a_holder_whose_stalled_lock_was_broken_stops(tmp_path):
    path = tmp_path / "locks" / "contexts.lock"
    # a heartbeat far apart from the staleness limit stands in for a holder frozen past it
    first = StageLock(path, settings=LockSettings(heartbeat_s=3600, stale_after_s=1),
                      label="LLM stage 'contexts/qasper'").acquire()
    first.ensure_held()  # holds it: nothing raised
    os.utime(path, (time.time() - 10, time.time() - 10))  # no heartbeat for 10 s
    second = StageLock(path, settings=LockSettings(stale_after_s=1, wait_s=0)).acquire()
    assert second.broken and second.broken[0]["token"] == first.token
    with pytest.raises(StageLockLost, match=r"LLM stage 'contexts/qasper': lost the lock .*"
                                            rf"now held by pid {os.getpid()}"):
        first.ensure_held()
    assert first.lost
    first.release()  # releases nothing: the file is the second holder's
    assert json.loads(path.read_text())["token"] == second.token
    second.ensure_held()
    second.release()
    assert not path.exists()


def test_a_deleted_lock_is_lost_too(tmp_path):
    path = tmp_path / "l.lock"
    lock = StageLock(path, settings=LockSettings(heartbeat_s=3600)).acquire()
    path.unlink()
    with pytest.raises(StageLockLost, match="it was deleted"):
        lock.ensure_held()
    lock.release()
