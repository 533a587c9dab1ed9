"""Process isolation (tests/isolation.py): a native crash in an isolated test fails that test,
is reported with the child's stderr, and the suite goes on."""

import os
import subprocess
import sys

from conftest import REPO

INNER_TESTS = '''
import ctypes
import os
import time

import pytest


@pytest.mark.isolated
def test_segfaults():
    ctypes.string_at(0)  # reads address 0: SIGSEGV in the child


@pytest.mark.isolated
def test_fails():
    assert 1 + 1 == 3


@pytest.mark.isolated
def test_skips():
    pytest.skip("no model on this machine")


@pytest.mark.isolated(timeout_s=3)
def test_hangs():
    time.sleep(600)


@pytest.mark.isolated
def test_runs_in_a_child():
    assert os.environ.get("STRUCTABLATE_ISOLATED_CHILD")


def test_after_the_crash_runs_in_process():
    assert not os.environ.get("STRUCTABLATE_ISOLATED_CHILD")
'''


def test_a_segfault_fails_its_test_and_the_suite_goes_on(tmp_path):
    (tmp_path / "conftest.py").write_text(
        "from isolation import pytest_configure, pytest_pyfunc_call, pytest_runtest_logreport"
        "  # noqa: F401\n")
    (tmp_path / "test_inner.py").write_text(INNER_TESTS)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO / "tests"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.pop("STRUCTABLATE_ISOLATED_CHILD", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path), "-rA", "-p", "no:cacheprovider",
         f"--rootdir={tmp_path}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    # exit code 1 = "some tests failed"; a crash of the pytest process itself would be -11
    assert proc.returncode == 1, out[-4000:]
    assert "3 failed, 2 passed, 1 skipped" in out, out[-4000:]
    segv = out.split("test_segfaults ", 1)[1].split("___ test_fails ", 1)[0]
    assert "killed by signal SIGSEGV" in segv
    assert "Fatal Python error: Segmentation fault" in segv  # the child's stderr tail
    assert "test_segfaults" in segv.split("child stderr", 1)[1]  # faulthandler's traceback
    assert "assert (1 + 1) == 3" in out or "assert 2 == 3" in out
    assert "ran past 3 s" in out
    assert "SKIPPED [1]" in out and "no model on this machine" in out
    assert "PASSED test_inner.py::test_runs_in_a_child" in out
    assert "PASSED test_inner.py::test_after_the_crash_runs_in_process" in out
