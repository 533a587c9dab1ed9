"""The README's "Run it on your corpus" names the install command of a fresh clone (before,
it assumed .venv existed), and that command is a real Makefile target that creates .venv and
installs the package (checked with ``make -n`` in a copy without .venv: nothing is run)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from conftest import REPO


def test_run_it_on_your_corpus_names_the_install_command_of_a_fresh_clone(tmp_path):
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("### Run it on your corpus", 1)[1].split("\n## ", 1)[0]
    before_run = section.split("snakemake --cores", 1)[0]
    m = re.search(r"`(make [^`]+)`", before_run)
    assert m, "the section names no install command before the run"
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(REPO / name, tmp_path / name)
    proc = subprocess.run([*m.group(1).split(), "-n"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert "python3 -m venv .venv" in proc.stdout
    assert re.search(r"\.venv/bin/python -m pip install .*-e \.$", proc.stdout, re.M)
