"""What a SLURM submission would be refused for, found while the run is planned.

``snakemake-executor-plugin-slurm`` checks each job's ``slurm_extra`` resource only when it
submits that job (``validate_slurm_extra``): an option the plugin sets itself (``--qos``,
``--time``, ``--gres``, ``--mem`` …) there fails every submission, after the plan was shown
and accepted. :func:`slurm_extra_problems` applies the plugin's own list of forbidden options
(:func:`forbidden_options`) to the resource strings a profile or the command line gives,
so the workflow refuses them before any job (rules/common.smk), naming the key and the
resource the plugin offers instead.

:func:`gpu_group` places the short GPU jobs (embedding, reranking) in SLURM group jobs that
never wait on a stage none of their members needs, and a model on a CPU device in none.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["PLUGIN_RESOURCE", "booked_gpu_hours", "forbidden_options", "gpu_group", "on_gpu",
           "slurm_extra_problems", "upstream_stages"]

PLUGIN_RESOURCE: dict[str, str] = {
    "quality of service": "the `qos` resource (default-resources: {qos: NAME}) or the "
                          "profile's `slurm-qos: NAME`",
    "runtime/time limit": "the `runtime` resource (minutes)",
    "memory": "the `mem_mb` resource",
    "memory per CPU": "the `mem_mb_per_cpu` resource",
    "account": "the `slurm_account` resource",
    "partition": "profiles/slurm/partitions.yaml (or the `slurm_partition` resource)",
    "node constraints": "the `constraint` resource",
    "GPU allocation": "the `gpu` and `gpu_model` resources",
    "generic resources (GRES)": "the `gres` resource",
    "CPUs per task": "the rule's threads (or the `cpus_per_task` resource)",
    "CPUs per GPU": "the `cpus_per_gpu` resource",
    "number of nodes": "the `nodes` resource",
    "cluster specification": "the `clusters` resource",
}
"""What to use instead of each option the plugin refuses in ``slurm_extra`` (by the plugin's
own name for the option)."""


def forbidden_options() -> dict[str, str]:
    """The plugin's patterns of options it refuses in ``slurm_extra`` (regex -> name), or an
    empty mapping when the plugin is not installed (nothing is submitted to SLURM then)."""
    try:
        from snakemake_executor_plugin_slurm.validation import get_forbidden_slurm_options
    except ImportError:
        return {}
    return dict(get_forbidden_slurm_options())


def slurm_extra_problems(extras: Mapping[str, str]) -> list[str]:
    """``key: why`` for each ``slurm_extra`` text (``extras``: where it is set, e.g.
    ``default-resources: slurm_extra`` -> the text as written) holding an option the plugin
    would refuse at submission, with the resource to use instead."""
    patterns = forbidden_options()
    out = []
    for key, text in extras.items():
        for pattern, name in patterns.items():
            if re.search(pattern, str(text)):
                instead = PLUGIN_RESOURCE.get(name, "the plugin's own resource")
                out.append(f"{key}: {text!s} sets the {name}, which "
                           "snakemake-executor-plugin-slurm refuses in slurm_extra on every "
                           f"submission; use {instead}")
    return out


# ------------------------------------------------------------------ GPU jobs by device and DAG


def on_gpu(device: str) -> bool:
    """Whether a torch ``device`` setting (``cpu``, ``cuda``, ``cuda:1``) books a GPU."""
    return device.startswith("cuda")


def upstream_stages(plan: Any, corpus: str, chunksets: list[str] | None,
                    questions: bool) -> list[str]:
    """The long stages (hours) an embedding or reranking job of ``corpus`` waits for, in
    pipeline order: ``induction`` when one of ``chunksets`` is cut from induced structure or
    sized to it (whichever inducer runs), ``contexts`` when one is A1's, ``queries`` when the job
    reads the corpus's generated questions (``questions``). Pure: reads the plan only."""
    from structablate import study

    conds = [c for c in plan.conditions if chunksets is not None
             and study.condition(c).chunkset in chunksets]
    out = []
    if any(plan.reads_induced(c) for c in conds):
        out.append("induction")
    if any(study.needs_llm_contexts(c) for c in conds):
        out.append("contexts")
    if questions and plan.generates_queries(corpus):
        out.append("queries")
    return out


def gpu_group(workflow: Any, plan: Any, kind: str, rule: str, wildcards: Any) -> str | None:
    """The SLURM group of one embedding (``kind`` ``embed``) or reranking (``rerank``) job:
    ``{kind}-{corpus}-{stages}`` (stages from :func:`upstream_stages`, ``base`` when none),
    so a group job never waits for a corpus or a stage none of its members needs; None (no
    group) for a model on a CPU device, and in a local run (groups only pack SLURM
    submissions). The id is registered under ``kind`` so that the profile's
    ``group-components: {kind: N}`` packs N such jobs per submission, as Snakemake does for a
    group name with wildcards."""
    w = dict(wildcards.items()) if hasattr(wildcards, "items") else dict(vars(wildcards))
    if workflow.local_exec and not (workflow.remote_exec or workflow.subprocess_exec):
        return None
    s = plan.settings
    if rule == "rerank":
        device = s.rerankers[w["reranker"]].device
        chunksets: list[str] | None = [_chunkset(w["condition"])]
        questions = True
    else:
        device = s.embedders[w["embedder"]].device
        chunksets = None if rule == "embed_queries" else [w["chunkset"]]
        questions = rule == "embed_queries"
    if not on_gpu(device):
        return None
    stages = upstream_stages(plan, w["corpus"], chunksets, questions)
    gid = f"{kind}-{w['corpus']}-{'+'.join(stages) or 'base'}"
    workflow.parent_groupids[gid] = kind
    return gid


def _chunkset(condition: str) -> str:
    from structablate import study

    return study.condition(condition).chunkset


def booked_gpu_hours(units: list[dict[str, Any]]) -> float:
    """GPU-hours a plan books at attempt 1: for every submitted job or group job
    (tests/slurm_plan.py's units; ``local`` ones run on the submit host), its ``gpu`` count
    times its ``runtime`` (minutes) / 60."""
    return sum(int(u["resources"].get("gpu", 0) or 0) * u["resources"]["runtime"] / 60
               for u in units if not u["local"])


def gpu_hours_by_unit(units: list[dict[str, Any]]) -> dict[str, float]:
    """:func:`booked_gpu_hours` split by rule (a group job by its group's kind, e.g.
    ``embed``)."""
    out: dict[str, float] = {}
    for u in units:
        gpus = int(u["resources"].get("gpu", 0) or 0)
        if u["local"] or not gpus:
            continue
        name = u["group"].split("-")[0] if u["group"] else u["rule"]
        out[name] = out.get(name, 0.0) + gpus * u["resources"]["runtime"] / 60
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m structablate.slurm PLAN.json``: the GPU-hours a plan written by
    tests/slurm_plan.py books at attempt 1, by rule, and the number of sbatch submissions."""
    import json
    import sys

    args = sys.argv[1:] if argv is None else argv
    units = json.loads(open(args[0], encoding="utf-8").read())["units"]
    for name, hours in sorted(gpu_hours_by_unit(units).items()):
        print(f"{name}\t{hours:.1f}")
    submitted = sum(1 for u in units if not u["local"])
    print(f"total\t{booked_gpu_hours(units):.1f} GPU-hours in {submitted} submissions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
