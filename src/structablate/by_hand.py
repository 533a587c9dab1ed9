"""Run one glue script by hand, outside a Snakemake run, on a results folder.

A glue script (``workflow_scripts/<rule>.py``) reads everything from the ``snakemake`` object
Snakemake hands it. :func:`mock_snakemake` builds that object for one rule and its wildcards
from the workflow itself (as PyPSA-Eur's ``mock_snakemake`` does): the Snakefile is loaded
with the given config, the rule's job is expanded with the wildcards, and its inputs,
outputs, params (the job's settings trigger and code fingerprint), log, threads, resources
and config are those the real job gets, as absolute paths. :func:`run_glue` runs the rule's
script with it in this process, so a debugger or a profiler can follow it::

    python -m structablate.by_hand RULE NAME=VALUE … [--configfile FILE …] [--config K=V …]
    python -m pdb -m structablate.by_hand RULE NAME=VALUE …

``--dry`` prints the job instead of running it. The script writes the rule's outputs (and
its job record, :func:`structablate.workflow.record_job`) as the job would; Snakemake's own
metadata of them is not touched. A rule the workflow lacks, wildcards other than the rule's,
or an input the folder does not hold (yet) is refused, naming it.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from structablate.errors import StructablateError


class ByHandError(StructablateError, ValueError):
    """A rule, its wildcards or its inputs do not allow running its glue by hand."""


@dataclass(frozen=True)
class GlueJob:
    """One job of the workflow, ready to run by hand: its rule, its glue script (absolute),
    the ``snakemake`` object the script reads (:class:`snakemake.script.Snakemake`) and the
    working folder it runs in (where the config's relative paths point)."""

    rule: str
    script: Path
    snakemake: Any
    workdir: Path

    def describe(self) -> str:
        """The job as lines: rule, script, wildcards, then each input, output, param, log."""
        smk = self.snakemake
        lines = [f"rule {self.rule}: {self.script}",
                 "wildcards: " + (", ".join(f"{k}={v}" for k, v in smk.wildcards.items())
                                  or "none")]
        for label, items in (("input", smk.input), ("output", smk.output),
                             ("params", smk.params), ("log", smk.log)):
            for key, value in items.items():
                lines.append(f"{label}.{key}: {value}")
        return "\n".join(lines)


def _absolute(io: Any, workdir: Path) -> None:
    """Make every path of a Snakemake file list absolute under ``workdir`` (in place)."""
    for i, path in enumerate(io):
        io[i] = str(workdir / path) if not os.path.isabs(path) else str(path)


def glue_job(rule: str, wildcards: Mapping[str, str] | None = None, *,
             configfiles: Sequence[str | os.PathLike[str]] = (),
             config: Mapping[str, Any] | None = None,
             workdir: str | os.PathLike[str] = ".",
             snakefile: str | os.PathLike[str] | None = None) -> GlueJob:
    """The job of ``rule`` with ``wildcards``, from the workflow ``snakefile`` (default:
    ``workdir``'s ``Snakefile``) run in the working folder ``workdir`` under ``configfiles``
    and ``config`` (as ``--configfile`` and ``--config``; neither: the working folder's
    ``config.yaml``, as a run without them)."""
    from snakemake.api import SnakemakeApi
    from snakemake.dag import DAG
    from snakemake.jobs import Job
    from snakemake.script import Snakemake
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
    )

    workdir = Path(workdir).resolve()
    snakefile = Path(snakefile).resolve() if snakefile else workdir / "Snakefile"
    if not snakefile.is_file():
        raise ByHandError(f"{snakefile}: no Snakefile; run from the repository (or give "
                          "--directory or --snakefile)")
    wildcards = {k: str(v) for k, v in (wildcards or {}).items()}
    here, argv = Path.cwd(), sys.argv
    # The Snakefile refuses a folder whose records say other settings or code made its
    # outputs (rules/common.smk, check_records), unless the run forces every job: a job run
    # by hand runs whatever its record says, and no other job runs.
    sys.argv = ["snakemake", "--forceall"]
    try:
        with SnakemakeApi(OutputSettings()) as api:
            wf_api = api.workflow(
                resource_settings=ResourceSettings(cores=1),
                config_settings=ConfigSettings(
                    configfiles=[Path(f).resolve() for f in configfiles], config=config or {}),
                snakefile=snakefile, workdir=workdir)
            workflow = wf_api._workflow
            names = sorted(r.name for r in workflow.rules)
            if rule not in names:
                raise ByHandError(f"no rule {rule!r} in {snakefile}; its rules: "
                                  + ", ".join(names))
            r = workflow.get_rule(rule)
            if r.script is None:
                raise ByHandError(f"rule {rule} runs no glue script (it has no script:)")
            want = set(r.wildcard_names)
            if set(wildcards) != want:
                raise ByHandError(
                    f"rule {rule} takes the wildcards {', '.join(sorted(want)) or 'none'}; "
                    f"given: {', '.join(sorted(wildcards)) or 'none'} (NAME=VALUE each)")
            workflow.dag_settings = DAGSettings()
            job = Job(r, DAG(workflow, rules=[r]), wildcards)
            for io in (job.input, job.output, job.log):
                _absolute(io, workdir)
            missing = [f for f in job.input if not Path(f).exists()]
            if missing:
                raise ByHandError(
                    f"rule {rule}: {len(missing)} input(s) missing, first {missing[0]}; build "
                    "them first (snakemake <file> with the same config)")
            script = (Path(r.basedir) / r.script).resolve() if not os.path.isabs(r.script) \
                else Path(r.script)
            smk = Snakemake(job.input, job.output, job.params, job.wildcards, job.threads,
                            job.resources, job.log, workflow.config, r.name, None,
                            scriptdir=script.parent)
            return GlueJob(rule, script, smk, workdir)
    finally:
        os.chdir(here)
        sys.argv = argv


def mock_snakemake(rule: str, wildcards: Mapping[str, str] | None = None, **kwargs: Any) -> Any:
    """The ``snakemake`` object of ``rule``'s job (:func:`glue_job`), for a script or a
    notebook: ``smk = mock_snakemake("chunk", {"corpus": "qasper", "chunkset": "A2"})``."""
    return glue_job(rule, wildcards, **kwargs).snakemake


def run_glue(job: GlueJob) -> None:
    """Run the job's glue script in this process with its ``snakemake`` object, in its
    working folder, its output and log folders made first (as Snakemake runs a job)."""
    for path in (*job.snakemake.output, *job.snakemake.log):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    here = Path.cwd()
    os.chdir(job.workdir)
    try:
        runpy.run_path(str(job.script), init_globals={"snakemake": job.snakemake},
                       run_name="__main__")
    finally:
        os.chdir(here)


def _pairs(items: Sequence[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ByHandError(f"{what} {item!r} is not NAME=VALUE")
        out[key] = value
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m structablate.by_hand",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("rule", help="the rule whose glue script to run")
    ap.add_argument("wildcards", nargs="*", metavar="NAME=VALUE", help="the job's wildcards")
    ap.add_argument("--configfile", nargs="+", default=[], help="as snakemake's --configfile")
    ap.add_argument("--config", nargs="+", default=[], metavar="KEY=VALUE",
                    help="as snakemake's --config (values read as YAML)")
    ap.add_argument("--directory", default=".", help="the working folder (default: here)")
    ap.add_argument("--snakefile", help="the workflow (default: the working folder's)")
    ap.add_argument("--dry", action="store_true", help="print the job, run nothing")
    a = ap.parse_args(argv)
    try:
        config = {k: yaml.safe_load(v) for k, v in _pairs(a.config, "--config").items()}
        job = glue_job(a.rule, _pairs(a.wildcards, "wildcard"), configfiles=a.configfile,
                       config=config, workdir=a.directory, snakefile=a.snakefile)
    except ByHandError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(job.describe())
    if not a.dry:
        run_glue(job)
        print(f"ran {job.script.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
