"""Run the CPU-half benchmarks and print the issue's table (each line: now, anchor, ratio).

Every line is measured in one run against its anchor on the same machine (ratios, not
absolute seconds, are what carries over; the development machine is shared and noisy).

    python bench/bench_table.py --qasper DATA/qasper [--work DIR] [--quick]

``--quick`` shrinks the sizes (first 300 papers, 1,000 queries, 10,000 chunks) for a smoke run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(script: str, *args: str) -> list[str]:
    print(f"\n== {script} {' '.join(args)}", flush=True)
    proc = subprocess.run([sys.executable, str(HERE / script), *args], capture_output=True,
                          text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode:
        sys.stdout.write(proc.stderr[-4000:])
        return [f"TABLE|{script}|failed (exit {proc.returncode})||||"]
    return [line for line in proc.stdout.splitlines() if line.startswith("TABLE|")]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qasper", required=True, help="directory with the three QASPER v0.3 files")
    ap.add_argument("--work", default=None, help="cache directory for the corpus tables")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    data = ["--qasper", args.qasper] + (["--work", args.work] if args.work else [])
    rows: list[str] = []
    rows += run("bench_chunking.py", *data, *(["--docs", "300"] if args.quick else []))
    rows += run("bench_metrics.py", *data, *(["--cells", "1"] if args.quick else []))
    rows += run("bench_two_stage.py", *(["--queries", "1000", "--chunks", "10000",
                                         "--sections", "3600"] if args.quick else []))
    rows += run("bench_hnsw.py", *(["--queries", "1000", "--chunks", "10000"]
                                   if args.quick else []))
    rows += run("bench_bootstrap.py", *(["--boot", "2000"] if args.quick else []))
    print("\n| what | now | anchor | ratio | note |\n| --- | --- | --- | --- | --- |")
    for line in rows:
        print("| " + " | ".join(line.split("|")[1:]) + " |")


if __name__ == "__main__":
    main()
