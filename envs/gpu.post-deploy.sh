#!/usr/bin/env sh
# Run by Snakemake inside the new envs/gpu.yaml environment, once, right after conda created it
# (on the submit host: no GPU needed). Stops the deployment when pip installed a CPU-only torch,
# which would leave every GPU job to fail on its node or, worse, run on the CPU.
set -e
python - <<'PY'
import sys

import torch

if not torch.version.cuda:
    sys.exit(f"envs/gpu.yaml: torch {torch.__version__} is a CPU-only build; the GPU rules need "
             "PyPI's CUDA build (check that no pip configuration points at PyTorch's CPU index "
             "or another find-links folder, then delete this environment under .snakemake/conda "
             "and run again)")
print(f"torch {torch.__version__} (CUDA {torch.version.cuda})")
PY
