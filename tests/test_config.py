"""Config validation: defaults filled, bad keys and values named by their path."""

import copy

import pytest
import yaml
from conftest import REPO

from structablate.config import ConfigError, check_config
from structablate.plan import Plan
from structablate.settings import dump

BASE = yaml.safe_load((REPO / "config.yaml").read_text())


def _bare(cfg: dict) -> dict:
    """``cfg`` with the QASPER corpus only and no stage-level llm blocks."""
    cfg["corpora"] = {"qasper": cfg["corpora"]["qasper"]}
    for stage in ("induction", "contexts"):
        cfg.get(stage, {}).pop("llm", None)
    return cfg


def _cfg(**patch):
    cfg = copy.deepcopy(BASE)
    for dotted, value in patch.items():
        node = cfg
        *head, last = dotted.split("__")
        for h in head:
            node = node[h]
        node[last] = value
    return cfg


def test_default_config_is_valid_and_filled(monkeypatch):
    monkeypatch.chdir(REPO)
    cfg = check_config(BASE)
    assert cfg["retrieval"]["hnsw"]["M"] == 32
    assert cfg["embedders"]["minilm"]["max_seq_length"] == 512
    assert cfg["embedders"]["minilm"]["device"] == "cpu"
    assert cfg["chunking"]["tokenizer"] is None


@pytest.mark.parametrize(
    "patch, message",
    [
        ({"chunking__t_max": 0}, "chunking.t_max: 0 is less than the minimum of 8"),
        ({"chunking__typo": 1}, "chunking: Additional properties are not allowed ('typo'"),
        ({"conditions": ["A0", "Z9"]}, "conditions.1: 'Z9' is not one of"),
        ({"embedders__minilm__batch_size": "8"}, "embedders.minilm.batch_size: '8' is not of type"),
        ({"retrieval__method": "faiss"}, "retrieval.method: 'faiss' is not one of"),
        ({"chunking__t_min": 400}, "chunking.t_min: must not exceed chunking.t_max"),
        ({"rerankers": {"none": {}, "ce": {"top_n": 5}}}, "rerankers.ce.model"),
        # a wrong key inside a oneOf branch is named, not just the branch's parent
        ({"corpora__wikipedia__queries__llm__modle": "x"},
         "corpora.wikipedia.queries.llm: Additional properties are not allowed ('modle'"),
        ({"corpora__wikipedia__queries": 5},
         "corpora.wikipedia.queries: 5 is not of type 'object'"),
    ],
)
def test_bad_values_name_their_key(monkeypatch, patch, message):
    monkeypatch.chdir(REPO)
    with pytest.raises(ConfigError) as err:
        check_config(_cfg(**patch), source="config.yaml")
    assert message in str(err.value) and "config.yaml" in str(err.value)


def test_missing_corpus_file_is_named(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"corpora.qasper.sources\[0\].path: no file"):
        check_config(BASE)


def test_llm_conditions_need_a_model(monkeypatch):
    monkeypatch.chdir(REPO)
    cfg = _bare(_cfg(conditions=["A0", "A1", "A3"]))
    cfg.pop("llm", None)
    cfg["induction"] = {"inducer": "llm"}
    with pytest.raises(ConfigError, match=r"llm.model: conditions A0, A1, A3 need an LLM for "
                       r"induction \(set llm.model or induction.llm.model"):
        check_config(cfg)
    cfg["induction"] = {"inducer": "texttiling"}
    with pytest.raises(ConfigError, match=r"conditions A1 need an LLM for contexts"):
        check_config(cfg)
    cfg["conditions"] = ["A0", "A3"]
    assert check_config(cfg)["induction"]["inducer"] == "texttiling"
    # a stage's own llm block is enough for that stage
    cfg["conditions"] = ["A0", "A1", "A3"]
    cfg["induction"] = {"inducer": "llm", "llm": {"model": "qwen"}}
    cfg["contexts"] = {"llm": {"model": "smollm2"}}
    assert check_config(cfg)["contexts"]["llm"] == {"model": "smollm2"}


def test_stage_llm_lays_the_stage_block_over_the_llm_block(monkeypatch):
    monkeypatch.chdir(REPO)
    cfg = _bare(_cfg())
    cfg["llm"] = {"model": "big", "mode": "replay", "cache": "all.jsonl",
                  "llamacpp": {"n_ctx": 8192, "n_threads": 2}}
    cfg["induction"] = {"inducer": "llm", "llm": {"model": "qwen", "cache": "ind.jsonl",
                                                  "llamacpp": {"n_ctx": 4096}}}
    plan = Plan.from_config(cfg)
    ind = plan.stage_llm("induction")
    assert ind.model == "qwen" and ind.cache == "ind.jsonl"
    assert ind.mode == "replay"  # not overridden: from the llm block
    # nested blocks merge
    assert (ind.llamacpp.n_ctx, ind.llamacpp.n_threads) == (4096, 2)
    ctx = plan.stage_llm("contexts")
    assert ctx.model == "big" and ctx.cache == "all.jsonl"
    assert plan.settings.llm.model == "big" and plan.settings.llm.llamacpp.n_ctx == 8192
    with pytest.raises(ValueError, match="corpus"):
        plan.stage_llm("queries")
    with pytest.raises(ValueError, match="unknown LLM stage"):
        plan.stage_llm("rerank")
    bad = _cfg()
    bad["contexts"] = {"llm": {"modle": "x"}}
    with pytest.raises(ConfigError, match="contexts.llm"):
        check_config(bad)


def test_llm_stages_lists_the_stages_that_run(monkeypatch):
    monkeypatch.chdir(REPO)
    cfg = _bare(_cfg(conditions=["A0", "G2"]))
    cfg["llm"] = {"model": "m", "mode": "replay"}
    cfg["induction"] = {"inducer": "llm"}
    cfg["size_match_structure"] = "gold"
    stages = Plan.from_config(cfg).llm_stages()
    assert stages == {"structure induction": None, "A1 contexts": None}
    cfg["size_match_structure"] = "induced"  # A0's windows are sized to induced structure
    cfg["conditions"] = ["A0", "A1"]
    cfg["contexts"] = {"llm": {"model": "small"}}
    stages = {k: dump(v) for k, v in Plan.from_config(cfg).llm_stages().items()}
    assert stages["structure induction"]["model"] == "m"
    assert stages["A1 contexts"]["model"] == "small" and stages["A1 contexts"]["mode"] == "replay"
    cfg["induction"] = {"inducer": "texttiling"}
    cfg["corpora"]["wiki"] = {"type": "wikipedia", "source": {"mode": "xml", "path": "x.xml"},
                              "queries": {"llm": {"model": "writer"}}}
    stages = Plan.from_config(cfg).llm_stages()
    assert stages["structure induction"] is None
    assert stages["queries (wiki)"].model == "writer"


def test_a_target_given_to_configfile_is_named_with_the_target_first_form(tmp_path,
                                                                          monkeypatch):
    """``snakemake --configfile my.yaml results/mydocs/funnel.json`` hands the target to
    --configfile (issue 52, item 6): a path under the results folder, or one that is not
    .yaml/.yml/.json, is named as a target; config files anywhere else pass."""
    from structablate.config import check_configfile_paths

    monkeypatch.chdir(tmp_path)
    my = tmp_path / "my.yaml"
    check_configfile_paths([my, tmp_path / "conf/more.yml", tmp_path / "a.json"], "results")
    check_configfile_paths([my], ".")  # results in the working folder: no path is a target
    with pytest.raises(ConfigError) as exc:
        check_configfile_paths([my, tmp_path / "results/mydocs/funnel.json"], "results")
    assert str(exc.value) == (
        "results/mydocs/funnel.json: given to --configfile, but it is an output under the "
        "results folder (results), not a configuration\n--configfile takes every path that "
        "follows it, so a target written after it is read as a config file. Put the targets "
        "first: snakemake --cores all results/mydocs/funnel.json --configfile my.yaml")
    # the configuration's own results folder; a path that is not a config file
    with pytest.raises(ConfigError, match=r"^out/x/run.json: given to --configfile, but it is "
                       r"an output under the results folder \(out\)"):
        check_configfile_paths([my, "out/x/run.json"], "out")
    with pytest.raises(ConfigError) as exc:
        check_configfile_paths([my, tmp_path / "summary.md", "b.yaml"], "results")
    assert str(exc.value).startswith("summary.md: given to --configfile, but it is not a "
                                     "config file (a config file ends in .yaml, .yml or .json)")
    assert str(exc.value).endswith("snakemake --cores all summary.md --configfile my.yaml "
                                   "b.yaml")
