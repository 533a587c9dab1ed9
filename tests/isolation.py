"""Run a test in a fresh Python child process, so a native crash fails that test only.

A test marked ``@pytest.mark.isolated`` (or one that asks for the ``smollm2_gguf`` fixture, see
conftest.py) is set up as usual in the pytest process, but its body is not called there: pytest
runs the same node id again in a child ``python -m pytest`` and reports what the child
reported. Passed, failed and skipped carry over; a child that dies without reporting (a
segfault in llama.cpp, an abort, ``os._exit``) or runs past the marker's ``timeout_s`` (default
1200 s) fails the test with the signal or exit code and the tail of the child's stderr, and the
suite goes on.

The hooks are imported into tests/conftest.py; a conftest elsewhere can do the same
(tests/test_isolation.py does, to prove a segfault is contained).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

CHILD_ENV = "STRUCTABLATE_ISOLATED_CHILD"
"""Set in the child: run the test body in process and write each phase's report as JSON lines
to the file it names."""
DEFAULT_TIMEOUT_S = 1200
TAIL_LINES = 60


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "isolated(timeout_s=1200): run the test body in a fresh python child process; a native "
        "crash there fails this test instead of killing the suite",
    )


def _tail(text: str, n: int = TAIL_LINES) -> str:
    lines = text.rstrip().splitlines()
    return "\n".join(lines[-n:]) if lines else "(empty)"


def _exit_reason(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by signal {signal.Signals(-rc).name} (exit code {rc})"
        except ValueError:
            return f"killed by signal {-rc} (exit code {rc})"
    return f"exit code {rc}"


def run_isolated(item: pytest.Item, timeout_s: float) -> None:
    """Run ``item`` in a child pytest; return on pass, else ``pytest.skip``/``pytest.fail``."""
    root = Path(str(item.config.rootpath))
    with tempfile.TemporaryDirectory(prefix="isolated-") as tmp:
        report_file = Path(tmp) / "reports.jsonl"
        env = dict(os.environ, **{CHILD_ENV: str(report_file)})
        cmd = [sys.executable, "-m", "pytest", item.nodeid, "-q", "--no-header",
               "-p", "no:cacheprovider", f"--rootdir={root}"]
        try:
            proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                                  timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (
                exc.stderr or "")
            proc = None
        if proc is None:
            pytest.fail(f"isolated child for {item.nodeid} ran past {timeout_s:g} s and was "
                        f"killed\n--- child stderr (last {TAIL_LINES} lines) ---\n{_tail(err)}",
                        pytrace=False)
        reports = []
        if report_file.exists():
            reports = [json.loads(line) for line in report_file.read_text().splitlines()]
    for rep in reports:
        if rep["outcome"] == "failed":
            pytest.fail(f"in the isolated child ({rep['when']}):\n{rep['longrepr']}",
                        pytrace=False)
    for rep in reports:
        if rep["outcome"] == "skipped":
            pytest.skip(rep["reason"])
    if [r["when"] for r in reports] == ["setup", "call", "teardown"] and proc.returncode == 0:
        return
    pytest.fail(
        f"isolated child for {item.nodeid} died: {_exit_reason(proc.returncode)}; phases "
        f"reported: {[r['when'] for r in reports] or 'none'}\n"
        f"--- child stderr (last {TAIL_LINES} lines) ---\n{_tail(proc.stderr)}\n"
        f"--- child stdout (last {TAIL_LINES} lines) ---\n{_tail(proc.stdout)}",
        pytrace=False,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    marker = pyfuncitem.get_closest_marker("isolated")
    if marker is None or os.environ.get(CHILD_ENV):
        return None  # not isolated, or already the child: call the body here
    run_isolated(pyfuncitem, float(marker.kwargs.get("timeout_s", DEFAULT_TIMEOUT_S)))
    return True


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = os.environ.get(CHILD_ENV)
    if not path:
        return
    rep = {"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
           "longrepr": "", "reason": ""}
    if report.skipped and isinstance(report.longrepr, tuple):
        rep["reason"] = str(report.longrepr[2]).removeprefix("Skipped: ")
    elif report.failed:
        rep["longrepr"] = report.longreprtext
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(rep) + "\n")
