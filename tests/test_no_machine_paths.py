"""Nothing committed depends on one machine: no tracked file names the development machines'
shared data folder beside the repository or an absolute path of a machine (a home, scratch or
temp folder). Optional real data is reached only through ``shared_file`` in tests/conftest.py
(``$STRUCTABLATE_DATA``); benchmarks take the data path as an argument."""

import re
import shutil
import subprocess

import pytest
from conftest import REPO

ALLOWED_FILES = {
    # the tests' one data helper: it alone knows the default location beside the repository
    "tests/conftest.py",
    # the Apptainer definition lays out the image's own file system (a venv under opt inside the
    # container), the same on every machine that runs the image
    "containers/gpu.def",
}

SHARED = re.compile(r"\.\.[/\\]shared\b")
# An absolute path whose first folder is a machine-local root. The leading "/" must start the
# path: not preceded by a word character, ".", ":", "/", "~", "$", "}" or "-". That keeps out
# URL paths (https://host.com/home/..., MediaWiki's /w/ under a host), relative paths
# (results/tmp/...), and expansions such as $(VENV)/bin or ${TMPDIR}/x. System paths that are
# the same on every Linux machine (/usr/..., /dev/null, /etc/...; shebangs, the Debian
# python3.11-doc HTML under /usr/share/doc that the HTML adapter tests read) are not in the
# list, so they pass.
MACHINE_ROOTS = ("work", "home", "root", "tmp", "Users", "mnt", "scratch", "data", "lustre",
                 "gpfs", "opt", "srv")
ABSOLUTE = re.compile(r"(?:^|[^\w.:/~$}\-])(/(?:" + "|".join(MACHINE_ROOTS)
                      + r")/[^\s\"'`)]*)")
FILE_URL = re.compile(r"file://(/[^\s\"'`)]*)")


def offending(text: str) -> list[str]:
    """The machine-specific paths named in ``text``."""
    return ([m.group(0) for m in SHARED.finditer(text)]
            + [m.group(1) for m in ABSOLUTE.finditer(text)]
            + [m.group(1) for m in FILE_URL.finditer(text)])


def _p(s: str) -> str:
    """Examples are written with "@" for "/", so this file does not name them itself."""
    return s.replace("@", "/")


@pytest.mark.parametrize("text", [_p(s) for s in [
    'QASPER_TEST = "@work@shared@data@qasper@qasper-test-v0.3.json"',
    "      - {format: v0.3, path: ..@shared@data@qasper@train.json}",
    'SHARED = REPO.parent / "..@shared"',
    "DEV = Path('@home@alice@data@enwiki.xml.bz2')",
    "out = '@tmp@run1@chunks.parquet'",
    "see @root@.cache@structablate@models",
    "export HF_HOME=@scratch@me@hf",
    "index-url = file:@@@opt@pypi@simple",
]])
def test_patterns_catch_machine_paths(text):
    assert offending(text), text


@pytest.mark.parametrize("text", [_p(s) for s in [
    "#!@usr@bin@env bash",
    "url=http:@@www.africaninspace.com@home@mission@logs@1@20020610.shtml",
    "https:@@en.wikipedia.org@w@api.php and path: @w@",
    "if [ ! -d @usr@share@doc@python3.11@html ]; then",
    "apt-get install python3.11-doc >@dev@null 2>&1",
    "$(VENV)@bin@python -m pytest; ${TMPDIR}@tmp@x",
    "results@tmp@x.parquet and data@qasper@qasper-train-v0.3.json",
    "~@.cache@structablate@models, $STRUCTABLATE_DATA@wikipedia@",
    'import "..@shared_utils"',
]])
def test_patterns_pass_legitimate_strings(text):
    assert offending(text) == [], text


def test_no_tracked_file_names_a_machine_path():
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: no list of tracked files")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")
    bad = []
    for name in filter(None, files):
        path = REPO / name
        if name in ALLOWED_FILES or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            bad += [f"{name}:{lineno}: {hit}" for hit in offending(line)]
    assert not bad, "machine-specific paths in tracked files:\n" + "\n".join(bad)
