"""The rules' named resource requests (structablate.plan.resources)."""

from __future__ import annotations

import re
from types import SimpleNamespace

from conftest import REPO

from structablate.plan.resources import scaled, sized


def test_scaled_grows_with_the_attempt():
    mem = scaled(8000)
    assert [mem(None, a) for a in (1, 2, 3)] == [8000, 16000, 24000]
    per_device = scaled(lambda w: 30 if w.device == "cuda" else 480)
    assert [per_device(SimpleNamespace(device="cuda"), a) for a in (1, 2, 3)] == [30, 60, 90]
    assert per_device(SimpleNamespace(device="cpu"), 2) == 960


def test_sized_gives_gpu_memory_and_runtime():
    cpu = sized(16000, 240, gpu=0)
    assert list(cpu) == ["gpu", "mem_mb", "runtime"] and cpu["gpu"] == 0
    assert [cpu["mem_mb"](None, a) for a in (1, 3)] == [16000, 48000]
    assert [cpu["runtime"](None, a) for a in (1, 2)] == [240, 480]
    assert list(sized(8000, 60)) == ["mem_mb", "runtime"]  # no gpu key unless asked


def test_no_rule_writes_its_own_attempt_arithmetic():
    """Rules ask for resources by name; the attempt appears only in plan/resources.py."""
    for smk in sorted((REPO / "rules").glob("*.smk")):
        text = smk.read_text()
        assert not re.search(r"\battempt\b", text), smk.name
