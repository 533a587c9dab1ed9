"""Config files and --config through the real Snakemake command line (dry runs): a key given
twice in a --configfile is refused as `python -m structablate.config` refuses it, a YAML merge
key with an override is accepted, and numbers nested in --config are numbers."""

from __future__ import annotations

import pytest
from workflow_util import snakemake, write_project

pytestmark = pytest.mark.slow


def test_a_key_given_twice_in_a_configfile_is_refused_before_any_job(tmp_path):
    """Before: Snakemake's loader kept the last `seed:` silently."""
    write_project(tmp_path, ["G2"])
    cfg = tmp_path / "config.yaml"
    text = cfg.read_text()
    cfg.write_text(text + "seed: 7\n" if "\nseed:" in text else text + "seed: 7\nseed: 8\n")
    lines = cfg.read_text().splitlines()
    seeds = [i for i, t in enumerate(lines, 1) if t.startswith("seed:")]
    assert len(seeds) == 2
    proc = snakemake(tmp_path, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"config.yaml:{seeds[1]}:1: invalid YAML: found the key 'seed' a second time " \
           f"(first on line {seeds[0]})" in out, out[-2000:]
    assert not (tmp_path / "results").exists()


def test_a_yaml_merge_key_with_an_override_is_accepted_and_nested_config_numbers_too(tmp_path):
    """Before: the merge key's override was refused as a duplicate key, and
    ``--config statistics={bootstrap_iters: 300}`` was refused as a string, blaming the file."""
    write_project(tmp_path, ["G2"])
    cfg = tmp_path / "config.yaml"
    text = cfg.read_text()
    assert "\ninduction:\n" in text and "\nllm:\n" in text
    # the anchor must come before its alias: move the llm block's text to the top
    head, rest = text.split("\nllm:\n", 1)
    llm_lines = []
    for line in rest.splitlines(keepends=True):
        if llm_lines is not None and line.startswith("  "):
            llm_lines.append(line)
        else:
            break
    llm_block = "llm: &llmdefaults\n" + "".join(llm_lines)
    text = llm_block + head + "\n" + rest[len("".join(llm_lines)):]
    text = text.replace("\ninduction:\n", "\ninduction:\n  llm:\n    <<: *llmdefaults\n"
                        "    temperature: 0.5\n", 1)
    cfg.write_text(text)
    proc = snakemake(tmp_path, "-n", "--config", "statistics={bootstrap_iters: 300}",
                     "llm={seed: 12}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    # a wrong nested value names --config
    proc = snakemake(tmp_path, "-n", "--config", "statistics={bootstrap_iters: -3}")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "with --config statistics" in out and "statistics.bootstrap_iters" in out, \
        out[-2000:]


def _files_holding(root, needle: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_a_credential_in_the_config_stops_the_run_and_reaches_no_file(tmp_path):
    """Before: base_url userinfo and extra_body keys were accepted; a run stored them in
    .snakemake/metadata (rule params) in plain text."""
    def tweak(cfg):
        cfg["llm"]["openai"] = {"base_url": "http://user:SEKRIT-A@127.0.0.1:9/v1",
                                "extra_body": {"api_key": "SEKRIT-B"}}

    write_project(tmp_path, ["G2"], tweak=tweak)
    proc = snakemake(tmp_path, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "llm.openai.base_url: a URL with a user name or password" in out, out[-2000:]
    assert "llm.openai.extra_body.api_key: a key named like a credential" in out
    assert "SEKRIT" not in out
    assert not (tmp_path / "results").exists()
    # and given on the command line
    write_project(tmp_path, ["G2"])
    proc = snakemake(tmp_path, "-n", "--config", "llm={openai: {extra_body: {token: SEKRIT-C}}}")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "llm.openai.extra_body.token" in out, out[-2000:]
    assert "SEKRIT" not in out
    written = [p for p in _files_holding(tmp_path, "SEKRIT") if not p.endswith("config.yaml")]
    assert written == []
    assert not (tmp_path / "results").exists()
