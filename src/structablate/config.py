"""Configuration: schema validation with defaults filled in, and cross-key checks.

The schema is ``resources/schemas/config.schema.yaml``. :func:`check_config` fills every
default (also inside per-corpus / per-embedder entries), then checks what a schema cannot say
(condition dependencies, reranker/embedder references), and raises :class:`ConfigError` whose
message names the offending key path.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from structablate.conditions import CONDITIONS

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "resources" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """A configuration value is missing, unknown or inconsistent; the message names the key."""


def _with_defaults(validator_class):
    validate_props = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for prop, sub in properties.items():
                if "default" in sub and prop not in instance:
                    instance[prop] = copy.deepcopy(sub["default"])
        yield from validate_props(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


_Validator = _with_defaults(jsonschema.Draft202012Validator)


def load_schema(path: str | Path = SCHEMA_PATH) -> dict:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _key_path(err: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in err.absolute_path]
    return ".".join(parts) if parts else "<top level>"


def _deepest(err: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For a oneOf/anyOf failure, the sub-error that reached deepest into the value (a wrong
    key inside the matching branch, rather than "is not valid under any of the schemas");
    otherwise ``err`` itself."""
    if not err.context:
        return err
    subs = [_deepest(e) for e in err.context]
    best = max(subs, key=lambda e: len(e.absolute_path))
    return best if len(best.absolute_path) > len(err.absolute_path) else err


def check_config(config: Mapping[str, Any], source: str = "config") -> dict[str, Any]:
    """A validated copy of ``config`` with defaults filled in; :class:`ConfigError` if not."""
    cfg = copy.deepcopy(dict(config))
    validator = _Validator(load_schema())
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{_key_path(d)}: {d.message}" for d in map(_deepest, errors[:10])]
        raise ConfigError(f"{source}: invalid configuration:\n  " + "\n  ".join(lines))
    # fill per-entry defaults of mappings keyed by user names (the schema's
    # additionalProperties), which the properties hook above does not reach on empty dicts
    schema = load_schema()
    for section in ("corpora", "embedders", "rerankers"):
        # the entry schema alone, with the shared definitions its $refs point at
        sub_schema = {**schema["properties"][section]["additionalProperties"],
                      "$defs": schema.get("$defs", {})}
        for name, entry in cfg[section].items():
            validator = _Validator(sub_schema)
            for err in map(_deepest, validator.iter_errors(entry)):
                raise ConfigError(f"{source}: {section}.{name}.{_key_path(err)}: {err.message}")
    _cross_checks(cfg, source)
    return cfg


BYO_TYPES = ("markdown", "html", "jsonl")

LLM_STAGES = ("induction", "contexts", "queries")
"""The stages that call an LLM: structure induction (A family), A1 situating contexts, and
synthetic query generation (per corpus)."""


def stage_llm(cfg: Mapping[str, Any], stage: str, corpus: str | None = None) -> dict[str, Any]:
    """The llm settings ``stage`` runs with: the top-level ``llm`` block with the stage's own
    ``llm`` block laid over it key by key (``induction.llm``, ``contexts.llm``, or
    ``corpora.<corpus>.queries.llm`` for ``stage="queries"``). Nested backend blocks
    (``llamacpp``, ``openai``, ``vllm``) merge one level deep. A fresh dict; ``cfg`` is not
    changed. Lets a run induce structure with one model and write A1 contexts with another,
    each replayed from its own recording.
    """
    if stage not in LLM_STAGES:
        raise ValueError(f"unknown LLM stage {stage!r} (one of {', '.join(LLM_STAGES)})")
    merged = copy.deepcopy(dict(cfg.get("llm") or {}))
    if stage == "queries":
        if corpus is None:
            raise ValueError("stage 'queries' needs the corpus name")
        q = cfg["corpora"][corpus].get("queries")
        over = q.get("llm") if isinstance(q, Mapping) else None
    else:
        over = (cfg.get(stage) or {}).get("llm")
    for key, value in (over or {}).items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = {**merged[key], **copy.deepcopy(dict(value))}
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def user_queries_of(corpus: Mapping[str, Any]) -> str | None:
    """The user-queries file of a bring-your-own corpus entry, or None (queries generated)."""
    q = corpus.get("queries")
    if isinstance(q, str):
        return q
    if isinstance(q, Mapping) and q.get("path"):
        return str(q["path"])
    return None


def generates_queries(corpus: Mapping[str, Any]) -> bool:
    """Whether a corpus entry's questions are written by the LLM (Wikipedia corpora, and user
    corpora without a queries file)."""
    return corpus["type"] == "wikipedia" or (
        corpus["type"] in BYO_TYPES and not user_queries_of(corpus))


def stage_conditions(cfg: Mapping[str, Any]) -> dict[str, list[str]]:
    """For each LLM stage of the condition grid, the conditions of a checked config that need
    it: "induction" (with the LLM inducer: conditions on induced structure, and fixed windows
    when they are sized to induced structure) and "contexts" (A1's situating contexts)."""
    conds = cfg["conditions"]
    return {
        "induction": [c for c in conds if CONDITIONS[c].structure == "induced"
                      or (CONDITIONS[c].boundaries == "fixed"
                          and cfg["size_match_structure"] == "induced")]
        if cfg["induction"]["inducer"] == "llm" else [],
        "contexts": [c for c in conds if CONDITIONS[c].prefix == "context"],
    }


def llm_stages(cfg: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any] | None]]:
    """``{"stages": {label: settings or None}}`` for the report's provenance: the llm settings
    (:func:`stage_llm`) of every LLM stage of a checked config, None for a stage that does
    not run (:func:`stage_conditions`). Labels: "structure induction", "A1 contexts", and
    "queries (<corpus>)" per corpus whose questions are generated."""
    needs = stage_conditions(cfg)
    stages: dict[str, dict[str, Any] | None] = {
        label: stage_llm(cfg, stage) if needs[stage] else None
        for label, stage in (("structure induction", "induction"), ("A1 contexts", "contexts"))
    }
    for name, corpus in cfg["corpora"].items():
        if generates_queries(corpus):
            stages[f"queries ({name})"] = stage_llm(cfg, "queries", name)
    return {"stages": stages}


def _cross_checks(cfg: dict[str, Any], source: str) -> None:
    for name, corpus in cfg["corpora"].items():
        if corpus["type"] == "qasper" and not corpus.get("sources"):
            raise ConfigError(f"{source}: corpora.{name}.sources: a qasper corpus needs sources")
        if corpus["type"] in BYO_TYPES:
            if "path" not in corpus:
                raise ConfigError(f"{source}: corpora.{name}.path: a {corpus['type']} corpus "
                                  "needs the path of its files")
            if not user_queries_of(corpus) and not stage_llm(cfg, "queries", name).get("model"):
                raise ConfigError(
                    f"{source}: corpora.{name}.queries: without a queries file the questions "
                    "are generated by an LLM; give queries (JSONL/TSV, docs/byo.md) or set "
                    "llm.model (docs/queries.md)")
        if corpus["type"] == "wikipedia":
            if "source" not in corpus:
                raise ConfigError(
                    f"{source}: corpora.{name}.source: a wikipedia corpus needs a source "
                    "(mode: xml with a path, or mode: api)")
            if not isinstance(corpus.get("queries", {}), dict):
                raise ConfigError(
                    f"{source}: corpora.{name}.queries: a wikipedia corpus's queries are "
                    "generated; give the generation settings as a mapping (docs/queries.md)")
            if not stage_llm(cfg, "queries", name).get("model"):
                raise ConfigError(
                    f"{source}: llm.model: the wikipedia corpus {name!r} generates its queries "
                    "with an LLM (set llm.model, docs/llm.md)")
        for i, src in enumerate(corpus.get("sources", [])):
            p = Path(src["path"])
            if src.get("format", "v0.3") == "v0.3" and not p.exists():
                raise ConfigError(f"{source}: corpora.{name}.sources[{i}].path: no file {p}")
    conds = cfg["conditions"]
    for c in conds:
        if c not in CONDITIONS:
            raise ConfigError(f"{source}: conditions: unknown condition {c!r}")
    for rname, rr in cfg["rerankers"].items():
        if rname != "none" and "model" not in rr:
            raise ConfigError(f"{source}: rerankers.{rname}.model: a reranker needs a model")
        for e in rr.get("embedders", []):
            if e not in cfg["embedders"]:
                raise ConfigError(
                    f"{source}: rerankers.{rname}.embedders: unknown embedder {e!r}")
    stats = cfg["statistics"]
    if stats["primary"]["embedder"] is None:
        # the paper's primary cell uses the strong embedder: the last one listed by convention
        stats["primary"]["embedder"] = list(cfg["embedders"])[-1]
    elif stats["primary"]["embedder"] not in cfg["embedders"]:
        raise ConfigError(f"{source}: statistics.primary.embedder: unknown embedder "
                          f"{stats['primary']['embedder']!r}")
    for fam in ("contrasts", "extra_contrasts"):
        for name, pair in stats[fam].items():
            for c in pair:
                if c not in CONDITIONS:
                    raise ConfigError(
                        f"{source}: statistics.{fam}.{name}: unknown condition {c!r}")
    for stage, needs in stage_conditions(cfg).items():
        if needs and not stage_llm(cfg, stage).get("model"):
            raise ConfigError(
                f"{source}: llm.model: conditions {', '.join(needs)} need an LLM for "
                f"{stage} (set llm.model or {stage}.llm.model"
                + (", or induction.inducer: texttiling for the A family)" if stage == "induction"
                   else ")"))
    if cfg["chunking"]["t_min"] > cfg["chunking"]["t_max"]:
        raise ConfigError(f"{source}: chunking.t_min: must not exceed chunking.t_max")
