"""Helpers shared by the thin scripts in ``workflow_scripts/``: logging into the rule's log."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any


def setup(smk: Any) -> logging.Logger:
    """Send this script's log records, warnings and progress bars to the rule's ``log:`` file.

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
    threads = getattr(smk, "threads", None)
    if threads:
        # torch and BLAS read these when they load; set them without importing torch here,
        # so rules that never touch a model do not pay for loading it
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(int(threads))
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(int(threads))
    return logging.getLogger(f"structablate.{smk.rule}")
