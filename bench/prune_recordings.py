"""Prune the recorded LLM generations (``resources/llm/*.jsonl``) to the records a run uses.

Runs the workflow once in replay mode into a fresh results folder, with every LLM client
tracing the cache keys it replays (a ``sitecustomize`` module on the jobs' ``PYTHONPATH`` wraps
``LLMClient._lookup``; nothing in the package changes), then rewrites each recording with only
the records whose key was replayed, in their original order (the last record of a key when a
file holds it twice). A run that fails (for example with a ``CacheMiss``) prunes nothing.

Example (the bundled default; the results folder is removed first)::

    nice -n 5 python bench/prune_recordings.py --results SCRATCH/prune-results \\
        resources/llm/queries-qwen2.5-coder-0.5b.jsonl resources/llm/contexts-smollm2-135m.jsonl

``--configfile`` (repeatable; default ``config.yaml``) names the configuration replayed; the
recordings are the files to prune (records of other files are only counted). ``--dry-run``
reports what would be kept and dropped without writing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

TRACE_ENV = "STRUCTABLATE_TRACE_LLM_KEYS"

SITECUSTOMIZE = f'''\
import os

if os.environ.get("{TRACE_ENV}"):
    from structablate.llm import client as _client

    _lookup = _client.LLMClient._lookup

    def _traced_lookup(self, key, record):
        text = _lookup(self, key, record)
        if text is not None and self.cache is not None:
            line = f"{{os.path.realpath(self.cache.path)}}\\t{{key}}\\n".encode()
            fd = os.open(os.environ["{TRACE_ENV}"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        return text

    _client.LLMClient._lookup = _traced_lookup
'''


def traced_run(configfiles: list[str], results: Path, cores: int, repo: Path,
               trace: Path) -> tuple[int, float, str]:
    """Run Snakemake on ``configfiles`` into ``results`` with key tracing into ``trace``;
    returns the exit code, the wall seconds and the output's tail."""
    with tempfile.TemporaryDirectory(prefix="trace-site-") as site:
        Path(site, "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([site, str(repo / "src")]),
                   **{TRACE_ENV: str(trace)})
        cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores),
               "--configfile", *configfiles, "--config", f"results={results}"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    return proc.returncode, wall, (proc.stdout + proc.stderr)[-6000:]


def prune_file(path: Path, used: set[str], dry_run: bool) -> tuple[int, int]:
    """Keep the records of ``path`` whose key is in ``used`` (atomic rewrite); returns (kept,
    dropped) record counts."""
    lines = path.read_bytes().splitlines(keepends=True)
    last: dict[str, int] = {}
    for i, line in enumerate(lines):
        last[json.loads(line)["key"]] = i
    keep = [line for i, line in enumerate(lines)
            if last.get(json.loads(line)["key"]) == i and json.loads(line)["key"] in used]
    if not dry_run:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(b"".join(keep))
        os.replace(tmp, path)
    return len(keep), len(lines) - len(keep)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("recordings", nargs="+", help="JSONL recordings to prune")
    ap.add_argument("--configfile", action="append", default=None)
    ap.add_argument("--results", required=True, help="a scratch results folder (removed first)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    repo = Path(__file__).resolve().parents[1]
    results = Path(args.results).resolve()
    if results == (repo / "results").resolve():
        raise SystemExit("--results must be a scratch folder, not the project's results/")
    shutil.rmtree(results, ignore_errors=True)
    results.mkdir(parents=True)
    trace = results / "llm-keys.tsv"
    rc, wall, tail = traced_run(args.configfile or ["config.yaml"], results, args.cores, repo,
                                trace)
    if rc != 0:
        print(tail, file=sys.stderr)
        raise SystemExit(f"snakemake failed (exit {rc}) after {wall:.0f} s: nothing pruned")
    used: dict[str, set[str]] = defaultdict(set)
    if trace.exists():
        for line in trace.read_text(encoding="utf-8").splitlines():
            path, key = line.split("\t")
            used[path].add(key)
    print(f"replay run: {wall:.0f} s wall, exit 0")
    for rec in args.recordings:
        path = Path(rec).resolve()
        kept, dropped = prune_file(path, used.get(str(path), set()), args.dry_run)
        print(f"{rec}: {len(used.get(str(path), set()))} keys replayed; kept {kept}, "
              f"dropped {dropped}{' (dry run)' if args.dry_run else ''}")
    others = sorted(set(used) - {str(Path(r).resolve()) for r in args.recordings})
    for path in others:
        print(f"(also replayed, not pruned: {path}, {len(used[path])} keys)")


if __name__ == "__main__":
    main()
