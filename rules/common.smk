# Shared set-up: config validation, wildcard constraints, target and parameter functions.
# Every rule's work is one call into the package structablate (src/structablate).

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from structablate.conditions import chunksets_for
from structablate.conditions import condition as get_condition
from structablate.config import (
    BYO_TYPES,
    check_config,
    generates_queries,
    llm_stages,
    stage_llm,
    user_queries_of,
)

config.update(check_config(config, source="config"))

R = config["results"]
CONDITIONS = config["conditions"]
CHUNKSETS = chunksets_for(CONDITIONS)
EMBEDDERS = list(config["embedders"])
RERANKERS = list(config["rerankers"])


def _alternatives(names):
    """A wildcard regex matching exactly the given names (never matches if none)."""
    if not names:
        return "(?!x)x"
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


def corpora_of_type(kind):
    return [name for name, c in config["corpora"].items() if c["type"] == kind]


def query_generating_corpora():
    """Corpora whose questions the LLM writes (Wikipedia; user corpora without questions)."""
    return [name for name, c in config["corpora"].items() if generates_queries(c)]


def byo_corpora(with_queries):
    """Bring-your-own corpora with (True) or without (False) a user-queries file."""
    return [name for name, c in config["corpora"].items() if c["type"] in BYO_TYPES
            and bool(user_queries_of(c)) == with_queries]


wildcard_constraints:
    corpus=_alternatives(config["corpora"]),
    embedder=_alternatives(EMBEDDERS),
    reranker=_alternatives(RERANKERS),
    condition=_alternatives(CONDITIONS),
    chunkset=_alternatives({*CHUNKSETS, "G2"}),


def all_targets():
    """Per-query scores for every cell and condition, plus the per-cell summaries."""
    targets = []
    for corpus in config["corpora"]:
        for embedder in EMBEDDERS:
            for reranker in rerankers_for(embedder):
                cell = f"{R}/{corpus}/{embedder}/{reranker}"
                targets += [f"{cell}/scores/{c}.parquet" for c in CONDITIONS]
                targets += [f"{cell}/trec/{c}.run" for c in CONDITIONS]
                targets += [f"{cell}/summary.parquet", f"{cell}/contrasts.parquet"]
    targets.append(f"{R}/summary.md")
    targets += [f"{R}/{corpus}/bm25.json" for corpus in config["corpora"]]
    targets += [f"{R}/report/index.html", f"{R}/report/index.md"]
    return targets


def rerankers_for(embedder):
    """Rerankers applied to an embedder's runs ('none' always; others as configured)."""
    out = []
    for name, rr in config["rerankers"].items():
        if name == "none" or embedder in rr.get("embedders", EMBEDDERS):
            out.append(name)
    return out


def chunk_tokenizer():
    """The tokenizer that counts chunk tokens: chunking.tokenizer or the first embedder."""
    return config["chunking"]["tokenizer"] or config["embedders"][EMBEDDERS[0]]["model"]


def structure_file(wildcards):
    """The sections table a chunkset's boundaries or section labels come from."""
    cond = get_condition(wildcards.chunkset)
    kind = cond.structure or "gold"
    return f"{R}/{wildcards.corpus}/sections_{kind}.parquet"


def size_reference_file(wildcards):
    """Fixed windows match the structural chunks of size_match_structure; others need none."""
    cond = get_condition(wildcards.chunkset)
    if cond.boundaries != "fixed":
        return []
    return f"{R}/{wildcards.corpus}/sections_{config['size_match_structure']}.parquet"


def chunking_params(wildcards):
    """Only the chunking keys that affect this chunkset, so an edit reruns only its branch."""
    cond = get_condition(wildcards.chunkset)
    c = config["chunking"]
    p = {"t_max": c["t_max"], "t_min": c["t_min"], "tokenizer": chunk_tokenizer()}
    if cond.boundaries == "fixed":
        p["fixed_snap_tokens"] = c["fixed_snap_tokens"]
    if cond.prefix in ("breadcrumb", "placebo"):
        p["breadcrumb_separator"] = c["breadcrumb_separator"]
        p["breadcrumb_include_title"] = c["breadcrumb_include_title"]
    if cond.prefix == "placebo":
        p["placebo_seed"] = config["seed"]
        p["placebo_forbid_identical"] = c["placebo_forbid_identical"]
    return p


def llm_params(stage):
    """Params function: the llm settings of ``stage`` (induction, contexts, queries), i.e. the
    llm block with the stage's own llm block laid over it (config.stage_llm)."""

    def params(wildcards):
        return stage_llm(config, stage, getattr(wildcards, "corpus", None))

    return params


def without_llm(block):
    """A stage's config block without its llm override (that travels in the llm param)."""
    return {k: v for k, v in (block or {}).items() if k != "llm"}


def query_generation_params(wildcards):
    """A generated-queries corpus's generation settings, without its llm override."""
    q = config["corpora"][wildcards.corpus].get("queries")
    return without_llm(q) if isinstance(q, dict) else {}


def chunkset_of(wildcards):
    return get_condition(wildcards.condition).chunkset


def retrieval_params(wildcards):
    """Retrieval keys that affect this condition (routing keys only for two-stage)."""
    r = config["retrieval"]
    p = {"top_k": r["top_k"], "method": r["method"]}
    if r["method"] == "hnsw":
        p["hnsw"] = r["hnsw"]
    if get_condition(wildcards.condition).retrieval == "two_stage":
        p["hier_top_sections"] = r["hier_top_sections"]
    return p
