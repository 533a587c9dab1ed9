"""The CI entry point `.ci/run`: a shell script that parses, stops on the first error and ends
by calling the README's test command (a syntax error there fails CI before any test runs)."""

import re
import subprocess

from conftest import REPO

CI_RUN = REPO / ".ci" / "run"


def test_ci_entry_parses_as_bash():
    out = subprocess.run(["bash", "-n", str(CI_RUN)], capture_output=True, text=True)
    assert out.returncode == 0, f"{CI_RUN}: {out.stderr}"


def test_ci_entry_is_strict_and_ends_with_the_readme_test_command():
    text = CI_RUN.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text
    commands = [ln.strip() for ln in text.splitlines()
                if ln.strip() and not ln.lstrip().startswith("#")]
    readme = (REPO / "README.md").read_text()
    m = re.search(r"^(make test)\b.*what CI runs", readme, re.M)
    assert m, "README no longer names the test command CI runs"
    assert commands[-1] == m.group(1)
