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


def check_config(config: Mapping[str, Any], source: str = "config") -> dict[str, Any]:
    """A validated copy of ``config`` with defaults filled in; :class:`ConfigError` if not."""
    cfg = copy.deepcopy(dict(config))
    validator = _Validator(load_schema())
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{_key_path(e)}: {e.message}" for e in errors[:10]]
        raise ConfigError(f"{source}: invalid configuration:\n  " + "\n  ".join(lines))
    # fill per-entry defaults of mappings keyed by user names (the schema's
    # additionalProperties), which the properties hook above does not reach on empty dicts
    for section in ("corpora", "embedders", "rerankers"):
        sub_schema = load_schema()["properties"][section]["additionalProperties"]
        for name, entry in cfg[section].items():
            validator = _Validator(sub_schema)
            for err in validator.iter_errors(entry):
                raise ConfigError(f"{source}: {section}.{name}.{_key_path(err)}: {err.message}")
    _cross_checks(cfg, source)
    return cfg


def _cross_checks(cfg: dict[str, Any], source: str) -> None:
    for name, corpus in cfg["corpora"].items():
        if corpus["type"] == "qasper" and not corpus.get("sources"):
            raise ConfigError(f"{source}: corpora.{name}.sources: a qasper corpus needs sources")
        if corpus["type"] in ("markdown", "html", "jsonl"):
            if "path" not in corpus:
                raise ConfigError(f"{source}: corpora.{name}.path: a {corpus['type']} corpus "
                                  "needs the path of its files")
            if not corpus.get("queries"):
                raise ConfigError(
                    f"{source}: corpora.{name}.queries: scoring needs queries with evidence "
                    "(JSONL/TSV, docs/byo.md); synthetic query generation is not part of this "
                    "release yet")
        if corpus["type"] == "wikipedia":
            if "source" not in corpus:
                raise ConfigError(
                    f"{source}: corpora.{name}.source: a wikipedia corpus needs a source "
                    "(mode: xml with a path, or mode: api)")
            if not isinstance(corpus.get("queries", {}), dict):
                raise ConfigError(
                    f"{source}: corpora.{name}.queries: a wikipedia corpus's queries are "
                    "generated; give the generation settings as a mapping (docs/queries.md)")
            if not cfg["llm"].get("model"):
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
    needs_llm = [c for c in conds if CONDITIONS[c].uses_llm(cfg["induction"]["inducer"])]
    needs_llm += ["A0 (size-matched to induced structure)"] if (
        "A0" in conds and cfg["size_match_structure"] == "induced"
        and cfg["induction"]["inducer"] == "llm") else []
    if needs_llm and not cfg["llm"].get("model"):
        raise ConfigError(
            f"{source}: llm.model: conditions {', '.join(needs_llm)} need an LLM "
            "(set llm.model, or induction.inducer: texttiling for the A family)")
    if cfg["chunking"]["t_min"] > cfg["chunking"]["t_max"]:
        raise ConfigError(f"{source}: chunking.t_min: must not exceed chunking.t_max")
