"""The rules' named resource requests (structablate.plan.resources)."""

from __future__ import annotations

import re

from conftest import REPO


def test_no_rule_writes_its_own_attempt_arithmetic():
    """Rules ask for resources by name; the attempt appears only in plan/resources.py."""
    for smk in sorted((REPO / "rules").glob("*.smk")):
        text = smk.read_text()
        assert not re.search(r"\battempt\b", text), smk.name
