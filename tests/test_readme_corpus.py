"""The README's "Run it on your corpus" snippet on an unseen documentation set (tests/
readme_run.py runs it once per session in a fresh copy): the run reaches the verdict page, which
lists the skipped stubs and the dropped questions with their reasons and says how many
questions and documents each answer rests on."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_the_snippet_reaches_the_verdict_page(readme_run):
    r = readme_run
    root, name, proc, seconds = r.root, r.corpus, r.proc, r.seconds
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "CacheMiss" not in out
    done = re.findall(r"(\d+) of (\d+) steps \(100%\) done", out)
    assert done, out[-3000:]
    page = (root / "results" / "report" / "index.md").read_text(encoding="utf-8")
    assert f"## Verdict: {name}" in page
    print(f"\nREADME snippet: {done[-1][1]} jobs in {seconds:.0f} s")


def verdict_text(root: Path, name: str) -> str:
    page = (root / "results" / "report" / "index.md").read_text(encoding="utf-8")
    start = page.index(f"## Verdict: {name}")
    end = page.index("\n## ", start + 1)
    return page[start:end]


def test_verdict_lists_skipped_files_and_dropped_questions_with_reasons(readme_run):
    r = readme_run
    root, name, proc = r.root, r.corpus, r.proc
    assert proc.returncode == 0
    verdict = verdict_text(root, name)
    funnel = json.loads((root / "results" / name / "funnel.json").read_text())
    skipped = {Path(s["where"]).name for s in funnel["skipped"]}
    assert skipped == {"abbr.md", "refs.md"}  # the two snippet stubs, no heading
    for stub in ("abbr.md", "refs.md"):
        assert re.search(rf"\.snippets/{stub} \(no heading", verdict), stub
    dropped = {d["qid"]: d["reason"] for d in funnel["queries"]["dropped"]}
    assert set(dropped) == {"pm12", "pm13", "pm14"}
    assert "no evidence found" in dropped["pm12"]
    assert "skipped as bad input" in dropped["pm13"]
    assert "no document 'extensions/emoji'" in dropped["pm14"]
    rows = {line.split(" | ")[1].split(" ")[0]: line for line in verdict.splitlines()
            if line.startswith("| question dropped |")}
    assert set(rows) == set(dropped)
    for qid, reason in dropped.items():
        assert reason.replace("|", "\\|") in rows[qid], qid
    counts = re.search(r"Questions dropped: ([^(]*)\(kept 11\)", verdict)
    assert counts, verdict
    assert sorted(counts.group(1).strip().rstrip(",").split(", ")) == [
        "1 skipped document", "1 unknown document", "1 unmapped"]


def test_verdict_says_how_many_questions_and_documents_each_answer_rests_on(readme_run):
    r = readme_run
    root, name, proc = r.root, r.corpus, r.proc
    assert proc.returncode == 0
    verdict = verdict_text(root, name)
    queries = json.loads((root / "results" / name / "funnel.json").read_text())["queries"]
    n_q, n_d = queries["kept"], queries["documents_with_kept_queries"]
    assert (n_q, n_d) == (11, 11)
    answers = [line for line in verdict.splitlines() if "Answer:" in line]
    assert len(answers) >= 3, verdict  # structure, heading paths, routing (A1 is not run)
    for line in answers:
        assert f"{n_q} queries over {n_d} documents" in line, line
    assert f"Only {n_q} questions" in verdict and f"Only {n_d} documents" in verdict
    assert "Is LLM contextualisation worth its tokens? Not run" in verdict
