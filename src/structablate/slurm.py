"""What a SLURM submission would be refused for, found while the run is planned.

``snakemake-executor-plugin-slurm`` checks each job's ``slurm_extra`` resource only when it
submits that job (``validate_slurm_extra``): an option the plugin sets itself (``--qos``,
``--time``, ``--gres``, ``--mem`` …) there fails every submission, after the plan was shown
and accepted. :func:`slurm_extra_problems` applies the plugin's own list of forbidden options
(:func:`forbidden_options`) to the resource strings a profile or the command line gives,
so the workflow refuses them before any job (rules/common.smk), naming the key and the
resource the plugin offers instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["PLUGIN_RESOURCE", "forbidden_options", "slurm_extra_problems"]

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
