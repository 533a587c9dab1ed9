"""What every glue script in ``workflow_scripts/`` shares: logging into the rule's log, thread
limits, and the job's settings from the plan.

Each glue script has one shape::

    from structablate.workflow import setup

    def main(smk):
        log, settings = setup(smk)
        ...  # read smk.input, call one package function, write smk.output

    main(snakemake)  # noqa: F821

``settings`` is :meth:`structablate.plan.Plan.rule_settings` for the job's rule and wildcards:
the same typed values the rule's ``params`` (its rerun trigger) were computed from.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Any


def setup(smk: Any) -> tuple[logging.Logger, dict[str, Any]]:
    """Send this job's log records, warnings and progress bars to the rule's ``log:`` file,
    set thread limits, and return ``(logger, settings)``.

    ``smk`` is the ``snakemake`` object Snakemake injects into a script.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    log_path = smk.log[0] if len(smk.log) else None
    if log_path:
        os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
        stream = open(log_path, "w", encoding="utf-8", buffering=1)  # noqa: SIM115
        sys.stderr = stream
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, force=True,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.captureWarnings(True)
    # SLURM time limits and Snakemake send SIGTERM: exit through Python so that exit hooks
    # commit buffered cache records and release stage locks
    signal.signal(signal.SIGTERM, _terminate)
    threads = getattr(smk, "threads", None)
    if threads:
        # torch and BLAS read these when they load; set them without importing torch here,
        # so rules that never touch a model do not pay for loading it
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(int(threads))
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(int(threads))
    return logging.getLogger(f"structablate.{smk.rule}"), job_settings(smk)


def job_settings(smk: Any) -> dict[str, Any]:
    """The job's settings from the plan (built from ``smk.config``)."""
    from structablate.plan import Plan

    plan = Plan.from_config(smk.config, check_files=False)
    return plan.rule_settings(smk.rule, dict(smk.wildcards.items()))



def _terminate(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)
