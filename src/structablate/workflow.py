"""What every glue script in ``workflow_scripts/`` shares: logging into the rule's log, thread
limits, and the job's settings from the plan.

Each glue script has one shape::

    from structablate.plan.jobs import ChunkJob
    from structablate.workflow import setup

    def main(smk):
        log, settings = setup(smk, ChunkJob)
        ...  # read smk.input, call one package function, write smk.output

    main(snakemake)  # noqa: F821

``settings`` is :meth:`structablate.plan.Plan.rule_settings` for the job's rule and wildcards,
an instance of the rule's job class (:mod:`structablate.plan.jobs`) read by attribute
(``settings.chunking``): the same typed values the rule's ``params`` (its rerun trigger) were
computed from.

Progress: the job's ``sys.stderr`` is a :class:`ProgressTee`. Log records, warnings and
library chatter go to the rule's log file only; every progress bar (tqdm) becomes whole lines
-- ``progress embed_chunks mydocs/minilm/A2: 512/1,024 texts (50%), 00:41 elapsed, about
00:40 left (12.4 texts/s)`` -- written to the log and, for a bar that runs longer than a few
seconds, to the terminal Snakemake runs in (or the SLURM job's output), at most one line per
:data:`PROGRESS_INTERVAL_S` per bar, and the final count when it ends.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from structablate.errors import StructablateError

if TYPE_CHECKING:
    from structablate.plan.jobs import Job

J = TypeVar("J", bound="Job")
"""The job class a glue script reads (:mod:`structablate.plan.jobs`)."""

PROGRESS_INTERVAL_S = 15.0
"""Seconds between two progress lines of one bar (the first and the last always print)."""

TERMINAL_AFTER_S = 5.0
"""A bar reaches the terminal once it has run this long (short bars stay in the log)."""

_TQDM = re.compile(
    r"^(?P<desc>.*?):?\s*(?P<pct>\d+)%\|[^|]*\|\s*(?P<n>[^/\s]+)/(?P<total>\S+)\s*"
    r"\[(?P<elapsed>[^<\]]+)<(?P<left>[^,\]]+),\s*(?P<rate>[^\]]*)\]")
_TQDM_OPEN = re.compile(r"^(?P<desc>.*?):?\s*(?P<n>\S+)\s*\[(?P<elapsed>[^,\]]+),\s*"
                        r"(?P<rate>[^\]]*)\]")


def progress_line(status: str) -> str:
    """A tqdm status (``desc:  45%|####  | 9/20 [00:12<00:14,  1.2batch/s]``) as plain words:
    ``desc: 9/20 (45%), 00:12 elapsed, about 00:14 left (1.2batch/s)``; anything else is
    returned stripped."""
    status = status.strip()
    m = _TQDM.match(status)
    if m:
        left = m["left"].strip()
        left = "estimate pending" if left == "?" else f"about {left} left"
        rate = m["rate"].strip()
        rate = "" if rate.startswith("?") else rate
        return (f"{m['desc'].strip()}: {m['n']}/{m['total']} ({m['pct']}%), "
                f"{m['elapsed'].strip()} elapsed, {left}" + (f" ({rate})" if rate else ""))
    m = _TQDM_OPEN.match(status)
    if m and "|" not in status:
        rate = m["rate"].strip()
        return (f"{m['desc'].strip()}: {m['n']} done, {m['elapsed'].strip()} elapsed"
                + (f" ({rate})" if rate else ""))
    return status


class ProgressTee:
    """A job's stderr: text to ``log``; tqdm status updates (writes that start with a carriage
    return) as whole progress lines to ``log`` and, for bars running longer than
    :data:`TERMINAL_AFTER_S`, to ``terminal`` (see the module docstring).

    It reports itself as a terminal (``isatty``) so that bars which show only on a terminal
    (tqdm's ``disable=None``) show in a job.
    """

    def __init__(self, log: TextIO, terminal: TextIO | None, label: str,
                 interval: float = PROGRESS_INTERVAL_S, clock=time.monotonic):
        self.log = log
        self.terminal = terminal
        self.label = label
        self.interval = interval
        self.clock = clock
        self._pending: str | None = None
        self._bar: str | None = None
        self._started = 0.0
        self._last = float("-inf")
        self._last_text: str | None = None
        self._on_terminal = False

    # -- file protocol -------------------------------------------------------------------
    encoding = "utf-8"
    errors = "replace"

    def isatty(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        self.log.flush()
        if self.terminal is not None:
            self.terminal.flush()

    def write(self, s: str) -> int:
        if not s:
            return 0
        if s.startswith("\r"):
            status = s[1:].strip()
            if status:
                self._status(status)
            return len(s)
        if self._pending is not None and s.strip() == "":
            self._emit(self._pending, final=True)  # a bar closing: its last status
            self._reset()
            return len(s)
        self.log.write(s)
        return len(s)

    def close(self) -> None:
        if self._pending is not None:
            self._emit(self._pending, final=True)
            self._reset()
        self.flush()

    # -- progress ------------------------------------------------------------------------
    def _reset(self) -> None:
        self._pending, self._bar, self._on_terminal = None, None, False
        self._last, self._last_text = float("-inf"), None

    def _status(self, status: str) -> None:
        bar = status.split(":", 1)[0]
        now = self.clock()
        if bar != self._bar:
            if self._pending is not None:
                self._emit(self._pending, final=True)
            self._reset()
            self._bar, self._started = bar, now
        self._pending = status
        if now - self._last >= self.interval:
            self._emit(status)

    def _emit(self, status: str, final: bool = False) -> None:
        if status == self._last_text:
            return
        now = self.clock()
        words = progress_line(status)
        rule = self.label.split(" ", 1)[0]
        if words.startswith(rule + ": "):  # the bar is named after the rule: say it once
            words = words[len(rule) + 2:]
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} progress {self.label}: {words}\n"
        self.log.write(line)
        if self.terminal is not None and (self._on_terminal
                                          or now - self._started >= TERMINAL_AFTER_S):
            self._on_terminal = True
            self.terminal.write(line)
            self.terminal.flush()
        self._last, self._last_text = now, status


def job_label(smk: Any) -> str:
    """``rule corpus/embedder/…``: the rule and its wildcard values, for progress lines."""
    values = [str(v) for _, v in smk.wildcards.items()] if smk.wildcards else []
    return " ".join([str(smk.rule), "/".join(values)]).strip()


def setup(smk: Any, job: type[J]) -> tuple[logging.Logger, J]:
    """Send this job's log records, warnings and progress bars to the rule's ``log:`` file,
    set thread limits, and return ``(logger, settings)``: ``settings`` the job's
    (:func:`job_settings`), an instance of ``job``, the job class the glue reads.

    ``smk`` is the ``snakemake`` object Snakemake injects into a script.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    log_path = smk.log[0] if len(smk.log) else None
    if log_path:
        os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
        stream = open(log_path, "w", encoding="utf-8", buffering=1)  # noqa: SIM115
        tee = ProgressTee(stream, sys.__stderr__, job_label(smk))
        atexit.register(tee.close)  # a bar cut short still leaves its last count
        sys.stderr = tee
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
    return logging.getLogger(f"structablate.{smk.rule}"), job_settings(smk, job, record=True)


def job_settings(smk: Any, job: type[J], *, record: bool = False) -> J:
    """The job's settings from the plan (built from ``smk.config``): the rule's job class
    instance for its wildcards, refused with ``TypeError`` unless it is a ``job`` (a glue
    script reading another rule's class). ``record``: write the job's record first
    (:func:`record_job`)."""
    from structablate.plan import Plan

    plan = Plan.from_config(smk.config, check_files=False)
    if record:
        record_job(smk, plan.settings.results)
    settings = plan.rule_settings(smk.rule, dict(smk.wildcards.items()))
    if not isinstance(settings, job):
        raise TypeError(f"rule {smk.rule}: the plan gives its jobs a {type(settings).__name__}, "
                        f"its glue reads a {job.__name__}")
    return settings


# ------------------------------------------------------------------------------- job records

RECORDS = ".records"
"""The folder under ``results:`` that holds one record per job (:func:`record_job`)."""

WORKDIR_ID = ".snakemake/structablate-workdir-id"
"""A random token naming a working folder's ``.snakemake/`` (and so its Snakemake metadata),
relative to the working folder."""


def workdir_id(create: bool = False) -> str:
    """The token of this working folder's ``.snakemake/`` (:data:`WORKDIR_ID`), made when
    ``create`` and missing (a new or deleted ``.snakemake/`` gets a new one); ``""`` when
    there is none."""
    import secrets

    path = Path(WORKDIR_ID)
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        if not create:
            return ""
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(8)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return token


def record_path(results: str, rule: str, wildcards: dict[str, str]) -> Path:
    """Where the record of the job of ``rule`` with ``wildcards`` lives."""
    key = ",".join(f"{k}={v}" for k, v in sorted(wildcards.items())) or "_"
    return Path(results) / RECORDS / rule / f"{key}.json"


def record_job(smk: Any, results: str) -> None:
    """Write the job's record into the results folder before the job writes its outputs: its
    rule, wildcards, outputs (relative to ``results:``), the results folder and working folder
    (:func:`workdir_id`) it ran from, and its rerun trigger (the rule's ``settings`` param:
    the settings that can change its outputs and the fingerprint of its code). Snakemake keeps
    the same in the working folder's ``.snakemake/metadata``; this copy travels with the
    results, so a plan from another working folder can tell outputs made with other settings
    (:func:`stale_outputs`). ``results``: the run's results folder. Jobs without a
    ``settings`` param (tests calling glue directly) write none."""
    from structablate.io import write_json

    params = getattr(getattr(smk, "params", None), "settings", None)
    if not isinstance(params, dict):
        return
    root = os.path.abspath(results)
    record = {
        "rule": str(smk.rule), "wildcards": dict(smk.wildcards.items()),
        "outputs": [os.path.relpath(os.path.abspath(str(o)), root) for o in smk.output],
        "results": str(Path(results).resolve()), "workdir": workdir_id(),
        "params": json.loads(json.dumps(params, default=str))}
    write_json(record, record_path(results, record["rule"], record["wildcards"]))


def _difference(old: Any, new: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first key path (dotted) where two JSON values differ, with both values."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            sub = f"{path}.{k}" if path else str(k)
            if k not in old or k not in new:
                return sub, old.get(k, "(absent)"), new.get(k, "(absent)")
            d = _difference(old[k], new[k], sub)
            if d:
                return d
        return None
    return None if old == new else (path, old, new)


METADATA = ".snakemake/metadata"
"""Where Snakemake (its default, file-based persistence) keeps one record per output, relative
to the working folder."""


def snakemake_record(output: str, metadata: str | os.PathLike[str] = METADATA) -> Path:
    """The file in which Snakemake's file persistence keeps its record of ``output`` (the path
    as the rule names it): its URL-safe base64, cut into folder names of at most the file
    system's name length, as Snakemake 9 lays them out."""
    import base64

    folder = Path(metadata)
    try:
        max_len = os.pathconf(folder if folder.is_dir() else ".", "PC_NAME_MAX") or 255
    except (OSError, ValueError):
        max_len = 255
    b64 = base64.urlsafe_b64encode(str(output).encode()).decode()
    cut = [b64[i:i + max_len - 1] for i in range(0, len(b64), max_len - 1)]
    return folder.joinpath(*["@" + c for c in cut[:-1]], cut[-1])


def has_snakemake_record(output: str) -> bool:
    """Whether this working folder's Snakemake holds a record of ``output``
    (:func:`snakemake_record`), and so compares its params with the rule's."""
    return snakemake_record(output).is_file()


def stale_outputs(results: str, targets: set[str], current: Any, workdir: str,
                  known: Any = has_snakemake_record) -> list[dict[str, Any]]:
    """Outputs under ``results`` that Snakemake cannot know to be stale: each job record
    (:func:`record_job`) whose outputs this working folder's Snakemake holds no record of
    (written from another working folder or results path than this one, or ``known(output)``
    false for one of them: a deleted ``.snakemake/metadata``, even where the working folder's
    token survived) and whose trigger differs from ``current(rule, wildcards)`` (``None``:
    the job is not planned). Only existing outputs among ``targets`` count. Returns
    ``{"file", "rule", "key", "was", "now"}`` per stale job."""
    real = str(Path(results).resolve())
    out = []
    for f in sorted((Path(results) / RECORDS).glob("*/*.json")):
        try:
            rec = json.loads(f.read_text(encoding="utf-8"))
            rule, wildcards = rec["rule"], rec["wildcards"]
            outputs = [f"{results}/{o}" for o in rec["outputs"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        present = [o for o in outputs if o in targets and os.path.exists(o)]
        if not present:
            continue
        if (workdir and rec.get("workdir") == workdir and rec.get("results") == real
                and all(known(o) for o in present)):
            continue  # written from here, and Snakemake's own record decides
        try:
            now = current(rule, wildcards)
        except (KeyError, ValueError):
            continue
        if now is None:
            continue
        diff = _difference(rec.get("params"), json.loads(json.dumps(now, default=str)))
        if diff:
            key, was, is_ = diff
            if key == "code":
                key = "code (the package code the job runs)"
            elif key.startswith("inputs."):
                key += " (the sha256 of the file's content)"
            elif key.startswith("models."):
                key += " (the digest of the model's files)"
            out.append({"file": present[0], "rule": rule, "key": key, "was": was, "now": is_})
    return out


def forced_rules(argv: list[str]) -> tuple[bool, set[str]]:
    """``(forceall, rules)`` from a Snakemake command line: ``-F``/``--forceall`` and the
    rules or files after ``-R``/``--forcerun`` (Snakemake has not stored them yet while it
    reads the workflow), whose jobs rerun anyway."""
    forceall, rules, taking = False, set(), False
    for arg in argv[1:]:
        if arg in ("-F", "--forceall"):
            forceall, taking = True, False
        elif arg in ("-R", "--forcerun"):
            taking = True
        elif arg.startswith("--forcerun="):
            rules.add(arg.split("=", 1)[1])
            taking = True
        elif arg.startswith("-"):
            taking = False
        elif taking:
            rules.add(arg)
    return forceall, rules


def stale_message(source: str, results: str, stale: list[dict[str, Any]]) -> str:
    """The refusal of :func:`stale_outputs`' findings, naming each file and key."""
    def short(v: Any) -> str:
        text = json.dumps(v, sort_keys=True, default=str)
        return text if len(text) <= 80 else text[:77] + "..."

    lines = "\n".join(f"  - {s['file']} (rule {s['rule']}): {s['key']} was {short(s['was'])}, "
                      f"is {short(s['now'])}" for s in stale[:20])
    more = f"\n  (and {len(stale) - 20} more)" if len(stale) > 20 else ""
    rules = " ".join(sorted({s["rule"] for s in stale}))
    return (f"{source}: {len(stale)} output(s) in {results} were made with other settings or "
            "code than this run's, and this working folder holds no Snakemake record of them "
            "(a copied results folder, one written from another working folder or clone, or a "
            f"deleted .snakemake/), so Snakemake would keep them:\n{lines}{more}\n"
            f"Rerun those jobs with `snakemake --forcerun {rules}` (and your other options), "
            "or delete those files, or point results: at a new folder.")



class ConcurrentRunError(StructablateError, RuntimeError):
    """Another Snakemake runs where this one would collide with it (the same working folder
    with another results folder, or the same results folder from another working folder);
    the message names it and what to do."""


RUNS_FOLDER = "structablate-runs"
"""The folder under a working folder's ``.snakemake/`` that holds one lock per results folder
a Snakemake started there is planning or running."""

RESULTS_LOCK = ".structablate-run.lock"
"""The lock file a running workflow holds in its results folder."""


def _no_wait() -> Any:
    from structablate.store.lock import LockSettings

    return LockSettings(wait_s=0.0)


def guard_working_folder(results: str, folder: str | os.PathLike[str] = ".snakemake") -> Any:
    """Refuse a second Snakemake in this working folder that writes another results folder.

    Snakemake keeps its locks in the working folder's ``.snakemake/locks`` and the first run to
    end deletes the whole folder, so two runs there race (one died with a raw
    ``FileNotFoundError: .snakemake/locks/0.input.lock``). Each planning Snakemake holds a
    lock named after its results folder under ``folder/structablate-runs/`` (a
    :class:`~structablate.store.lock.StageLock`: NFS-safe, heartbeat, broken when its holder is
    gone), then looks at the others: a live one for another results folder stops this run
    with :class:`ConcurrentRunError`. A second Snakemake on the *same* results folder (a dry
    run to see progress) is left to Snakemake's own lock. Returns the lock held (``None`` when
    another process holds this results folder's); it is released when the process exits."""
    from structablate.store.lock import StageLock, StageLocked

    real = Path(results).expanduser().resolve()
    runs = Path(folder) / RUNS_FOLDER
    mine = runs / (hashlib.sha1(str(real).encode()).hexdigest()[:16] + ".lock")
    lock: Any = StageLock(mine, settings=_no_wait(), label=str(real))
    try:
        lock.acquire()
    except StageLocked:
        lock = None
    for other in sorted(runs.glob("*.lock")):
        if other == mine:
            continue
        probe = StageLock(other, settings=_no_wait())
        holder = probe.read_holder()
        if not holder or probe._stale_reason(holder) is not None:
            continue
        if lock is not None:
            lock.release()
        raise ConcurrentRunError(
            f"another Snakemake runs in this working folder ({Path.cwd()}): "
            f"{probe.describe(holder)}, writing the results folder {holder.get('label', '?')} "
            f"(this one would write {real}). Two Snakemakes in one working folder share its "
            ".snakemake/ folder and race on Snakemake's own locks. Run each configuration "
            "from a working folder of its own: snakemake --directory <folder> --configfile "
            "<absolute path of the config> (relative paths in the config are read from that "
            "folder; docs/refusals.md, \"Two runs at once\"), or wait for the other to finish")
    return lock


def guard_results(results: str) -> Any:
    """Hold the lock of the results folder for as long as this process runs, or refuse with
    :class:`ConcurrentRunError` when a live Snakemake from another working folder (another
    clone, another ``--directory``) holds it: two runs writing one results folder take each
    other's outputs for their own. Called when the workflow starts its jobs (``onstart``), so
    a dry run never takes it."""
    from structablate.store.lock import StageLock, StageLocked

    lock = StageLock(Path(results) / RESULTS_LOCK, settings=_no_wait(), label=str(Path.cwd()))
    try:
        return lock.acquire()
    except StageLocked as exc:
        raise ConcurrentRunError(
            f"results: {results} is being written by another Snakemake: "
            f"{lock.describe(exc.holder)}, started in the working folder "
            f"{exc.holder.get('label', '?')}. Two runs writing one results folder would each "
            "take the other's outputs for its own. Wait for it to finish, or set results: to "
            f"another folder (if no such process exists, delete {lock.path})") from None


def _terminate(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)
