"""Plan a run with the real Snakemake command line and stop before anything is submitted.

``python tests/slurm_plan.py OUT.json [snakemake arguments]`` runs ``snakemake`` with the given
arguments (profiles, executor plugin and all) up to the point where the DAG is built and its
group jobs are formed, then writes every submission unit to OUT.json instead of starting the
job scheduler: each job or group job with its rule(s), wildcards, threads, evaluated resources
(attempt 1 and 2), the corpus builds and LLM stages it waits for (``upstream``), the container
image it runs in (``container``, null for none), whether it runs on the submit host and the
partition the executor plugin would submit it to (structablate.slurm.submission_units); and the
run's software deployment methods and Apptainer arguments. Nothing is submitted and no sbatch,
sinfo or sacct is needed. Used by tests/test_profiles.py.
"""

import json
import sys

LONG_STAGES = {"build_qasper", "build_wikipedia", "induce_structure", "contextualize",
               "generate_queries"}
"""Rules of the stages that take hours (a corpus build, an LLM stage): a job's ``upstream``
lists those it waits for."""


def _upstream(dag, job) -> list[str]:
    """Every job of LONG_STAGES that ``job`` depends on, directly or not, as
    ``rule(wildcards)``."""
    seen, todo, out = set(), [job], set()
    while todo:
        for dep in dag.dependencies[todo.pop()]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
                if dep.rule.name in LONG_STAGES:
                    wc = ",".join(f"{k}={v}" for k, v in sorted(dep.wildcards_dict.items()))
                    out.add(f"{dep.rule.name}({wc})")
    return sorted(out)


def _job(job, dag=None) -> dict:
    from structablate.slurm import job_fields, plain_resources

    upstream = _upstream(dag, job) if dag is not None else []
    fields = job_fields(job)  # rule, wildcards, threads and resources at attempt 1
    job.attempt = 2
    job.reset_params_and_resources()
    second = plain_resources(job.resources)
    job.attempt = 1
    job.reset_params_and_resources()
    return {**fields, "resources_attempt2": second, "upstream": upstream,
            "container": job.container_img_url or None}


def dump(workflow, out: str) -> None:
    """The run's submission units (structablate.slurm.submission_units, each job with its
    attempt-2 resources, upstream stages and container too) and deployment, to ``out``."""
    # the Snakefile put the workflow's package on sys.path
    from structablate.slurm import read_plugin_partitions, submission_units

    dag = workflow.dag
    partitions = read_plugin_partitions(
        getattr(workflow.executor_settings, "partition_config", None))
    units = submission_units(dag, partitions, describe=lambda job: _job(job, dag))
    with open(out, "w") as fh:
        json.dump({"local_exec": workflow.local_exec, "units": units,
                   "deployment": sorted(str(m) for m in
                                        workflow.deployment_settings.deployment_method),
                   "apptainer_args": workflow.deployment_settings.apptainer_args}, fh, indent=1)


def main() -> None:
    out, args = sys.argv[1], sys.argv[2:]
    import snakemake.cli  # first: snakemake.workflow cannot be imported on its own
    import snakemake.workflow

    def stop(workflow_self, *a, **kw):
        dump(snakemake.workflow.Workflow.current, out)
        raise SystemExit(0)

    original = snakemake.workflow.Workflow.execute

    def execute(self, *a, **kw):
        snakemake.workflow.Workflow.current = self
        return original(self, *a, **kw)

    snakemake.workflow.Workflow.execute = execute
    snakemake.workflow.JobScheduler = stop
    snakemake.cli.main(["--nolock", *args])


if __name__ == "__main__":
    main()
