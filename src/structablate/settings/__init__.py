"""Every configuration key of structablate: one frozen dataclass per config block.

These classes are the single statement of each key's name, type, default, range and meaning.
``resources/schemas/config.schema.yaml`` is generated from them (``python -m
structablate.settings > resources/schemas/config.schema.yaml``; a test keeps the file equal
to the classes), the config check validates against it (so an unknown key anywhere is refused
with its path), and :func:`load_settings` turns a validated YAML mapping into a
:class:`Settings` object that the plan (:mod:`structablate.plan`), the rules, the glue and the
report read. A key marked ``runtime`` cannot change any output (device, thread counts, retry
timings): it is kept out of Snakemake's rerun triggers.

The package's functions take these objects (or the values in them); no function re-states a
default of its own.
"""


from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import jsonschema

from structablate import study
from structablate.errors import ConfigError
from structablate.settings._core import (
    SEED_MAX,
    build_settings,
    default_of,
    dump,
    dump_outputs,
    json_schema,
    runtime_keys,
    setting,
)
from structablate.settings.compute import (
    DTYPES,
    EMBEDDING_BACKENDS,
    EmbeddingBackendFacts,
    backend_device_problem,
    is_gpu,
    planned_dtype,
)
from structablate.settings.corpora import (
    CORPUS_SOURCES,
    DEFAULT_DROP_SECTIONS,
    DEFAULT_TOPIC_KEYWORDS,
    LEAD_HEADING,
    CorpusSettings,
    QasperCorpus,
    QasperSource,
    QueryGenSettings,
    SourceFacts,
    UserCorpus,
    UserQueriesFile,
    WikipediaApiSource,
    WikipediaCorpus,
    WikipediaSelection,
    WikipediaXmlSource,
    corpus_kind,
    questions_file,
)
from structablate.settings.llm import (
    LLM_BACKENDS,
    BackendFacts,
    LlamaCppSettings,
    LLMSettings,
    OpenAISettings,
    VllmSettings,
    backend_facts,
    context_tokens,
    generates_on_gpu,
    one_process_per_core,
    served_model,
    with_context_tokens,
)
from structablate.settings.stages import (
    INDUCERS,
    MEASURE_PATTERN,
    ChunkingSettings,
    ContextsSettings,
    EmbedderSettings,
    GuardSettings,
    HnswSettings,
    InducerFacts,
    InductionSettings,
    MetricsSettings,
    PrimaryCell,
    RelativeMargin,
    ReportSettings,
    RerankerSettings,
    RetrievalSettings,
    StatisticsSettings,
    SupervisedSettings,
    TextTilingSettings,
)
from structablate.settings.vocabulary import (
    CONDITION_NAMES,
    QTYPES,
    Condition,
    QType,
    StructureName,
    T,
    frozen,
)

__all__ = [
    "BackendFacts",
    "CONDITION_NAMES",
    "CORPUS_SOURCES",
    "DTYPES",
    "EMBEDDING_BACKENDS",
    "EmbeddingBackendFacts",
    "ChunkingSettings",
    "Condition",
    "ConfigError",
    "ContextsSettings",
    "CorpusSettings",
    "DEFAULT_DROP_SECTIONS",
    "DEFAULT_TOPIC_KEYWORDS",
    "EmbedderSettings",
    "GuardSettings",
    "HnswSettings",
    "INDUCERS",
    "InducerFacts",
    "InductionSettings",
    "LEAD_HEADING",
    "LLMSettings",
    "LLM_BACKENDS",
    "LlamaCppSettings",
    "MEASURE_PATTERN",
    "MetricsSettings",
    "OpenAISettings",
    "PrimaryCell",
    "QTYPES",
    "QType",
    "QasperCorpus",
    "QasperSource",
    "QueryGenSettings",
    "RelativeMargin",
    "ReportSettings",
    "RerankerSettings",
    "RetrievalSettings",
    "SEED_MAX",
    "Settings",
    "SourceFacts",
    "StatisticsSettings",
    "StructureName",
    "SupervisedSettings",
    "TextTilingSettings",
    "UserCorpus",
    "UserQueriesFile",
    "VllmSettings",
    "WikipediaApiSource",
    "WikipediaCorpus",
    "WikipediaSelection",
    "WikipediaXmlSource",
    "backend_device_problem",
    "backend_facts",
    "context_tokens",
    "corpus_kind",
    "default_of",
    "dump",
    "dump_outputs",
    "generates_on_gpu",
    "is_gpu",
    "load_settings",
    "one_process_per_core",
    "parse",
    "planned_dtype",
    "questions_file",
    "runtime_keys",
    "schema",
    "served_model",
    "setting",
    "with_context_tokens",
]

# ============================================================================ root


@frozen
class Settings:
    """structablate workflow configuration (config.yaml is a commented example)."""

    corpora: dict[str, CorpusSettings] = setting(
        minProperties=1, propertyNames={"pattern": "^[a-z][a-z0-9_]*$"},
        doc="corpus name -> corpus definition")
    embedders: dict[str, EmbedderSettings] = setting(
        minProperties=1, propertyNames={"pattern": "^[A-Za-z0-9_]+$"},
        doc="embedder name -> embedder")
    results: str = setting("results", doc="folder every target (and log) is written under")
    seed: int = setting(20260710, minimum=0, maximum=SEED_MAX,
                        doc="global seed (placebo permutation, bootstrap)")
    conditions: tuple[Condition, ...] = setting(("A0", "G2", "G3"), minItems=1,
                                                uniqueItems=True, doc="conditions run")
    size_match_structure: StructureName = setting(
        study.PAPER_SIZE_MATCH.value, doc="structure whose structural chunks size the fixed "
        "windows of A0 and A1 (A0g is always sized to gold)")
    rerankers: dict[str, RerankerSettings] = setting(
        {"none": RerankerSettings()}, minProperties=1,
        propertyNames={"pattern": "^[A-Za-z0-9_]+$"}, doc="reranker name -> reranker")
    chunking: ChunkingSettings = setting(ChunkingSettings(), doc="chunking")
    retrieval: RetrievalSettings = setting(RetrievalSettings(), doc="retrieval")
    metrics: MetricsSettings = setting(MetricsSettings(), doc="measures")
    statistics: StatisticsSettings = setting(StatisticsSettings(), doc="statistics")
    llm: LLMSettings = setting(LLMSettings(), doc="the generative model")
    induction: InductionSettings = setting(InductionSettings(), doc="structure induction")
    contexts: ContextsSettings = setting(ContextsSettings(), doc="A1 contexts")
    report: ReportSettings = setting(ReportSettings(), doc="the report")
    container: str | None = setting(
        None, minLength=1, pattern=r"^\S+$", runtime=True,
        doc="Apptainer image every rule runs in under --software-deployment-method apptainer: "
        "a .sif file (built from containers/gpu.def) or a docker://, oras:// or library:// "
        "URI (null: the environment Snakemake runs in)")


def _llm_override_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of a stage's ``llm`` block: the llm block's keys, none required, no
    defaults (an unset key comes from the llm block), backend blocks partial too."""
    defs = schema["$defs"]

    def partial(name: str) -> dict[str, Any]:
        sub = copy.deepcopy(defs[name])
        sub.pop("required", None)
        for prop in sub["properties"].values():
            prop.pop("default", None)
            ref = prop.pop("$ref", None)
            if ref is not None:
                prop.update(partial(ref.rsplit("/", 1)[1]))
        return sub

    return partial("LLMSettings")


def schema() -> dict[str, Any]:
    """The JSON schema of the whole configuration (what resources/schemas holds)."""
    out = json_schema(Settings, title="structablate configuration")
    override = _llm_override_schema(out)
    override["description"] = ("per-stage LLM settings laid over the llm block key by key "
                               "(nested backend blocks merge too)")
    out["$defs"]["LLMOverride"] = override
    # every stage block's own ``llm`` field (a mapping laid over the llm block; the root's
    # ``llm`` is the LLMSettings block itself, a reference)
    stage_blocks = [name for name, d in out["$defs"].items()
                    if "$ref" not in d.get("properties", {}).get("llm", {"$ref": ""})]
    for name in stage_blocks:
        llm = out["$defs"][name]["properties"]["llm"]
        llm["type"] = ["object", "null"]
        llm.pop("additionalProperties", None)
        llm.pop("allOf", None)
        llm["allOf"] = [{"if": {"type": "object"}, "then": {"$ref": "#/$defs/LLMOverride"}}]
    return out


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


def _finite_number(checker: Any, instance: Any) -> bool:
    """JSON schema's ``number`` without NaN and the infinities: NaN compares false with every
    ``minimum`` and ``maximum`` (so ``.nan`` passed every range), and an infinity is never a
    count, a ratio or a limit a job can use (no limit is written ``null`` where a key allows
    it)."""
    return jsonschema.Draft202012Validator.TYPE_CHECKER.is_type(instance, "number") and (
        not isinstance(instance, float) or math.isfinite(instance))


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("number",
                                                                       _finite_number))
"""The validator of every settings block: draft 2020-12 whose numbers are finite."""


def _message(err: jsonschema.ValidationError) -> str:
    """The error's message; a number that is not finite is said to be one (jsonschema would
    say ``nan is not of type 'number'``)."""
    value = err.instance
    if err.validator == "type" and isinstance(value, float) and not math.isfinite(value):
        what = "NaN" if math.isnan(value) else f"{value} (infinity)"
        return (f"{what} is not a number a setting can take (a number setting must be "
                "finite: NaN passes every minimum and maximum); give a finite number")
    return err.message


_VALIDATOR: jsonschema.protocols.Validator | None = None


def validate(config: Mapping[str, Any], source: str = "config") -> None:
    """Raise :class:`ConfigError` naming every offending key path (up to ten) of ``config``;
    NaN and infinities are refused in every number setting (:func:`_finite_number`)."""
    global _VALIDATOR
    if _VALIDATOR is None:
        _VALIDATOR = _Validator(schema())
    errors = sorted(_VALIDATOR.iter_errors(dict(config)), key=lambda e: list(e.absolute_path))
    if errors:
        lines = list(dict.fromkeys(f"{_key_path(d)}: {_message(d)}"
                                   for d in map(_deepest, errors[:10])))
        raise ConfigError(f"{source}: invalid configuration:\n  " + "\n  ".join(lines))


def parse(cls: type[T], data: Mapping[str, Any] | None, where: str = "") -> T:
    """One settings block from a mapping (validated against the class's schema, defaults
    filled), e.g. ``parse(WikipediaSelection, {"n_docs": 5})`` in a notebook or a test;
    :class:`ConfigError` names the key under ``where``."""
    data = dict(data or {})
    validator = _Validator(json_schema(cls))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        def key(err: jsonschema.ValidationError) -> str:
            inner = ".".join(str(p) for p in err.absolute_path)
            return ".".join(k for k in (where, inner) if k) or "<top level>"

        lines = list(dict.fromkeys(f"{key(d)}: {_message(d)}"
                                   for d in map(_deepest, errors[:10])))
        raise ConfigError(f"invalid {cls.__name__}:\n  " + "\n  ".join(lines))
    return build_settings(cls, data)


def load_settings(config: Mapping[str, Any], source: str = "config") -> Settings:
    """Validate ``config`` (a YAML mapping) and return its typed :class:`Settings`.

    Credential-shaped values are refused before anything else reads the mapping
    (:func:`structablate.secrets.refuse_secrets`); ``results`` is checked and ``~``-expanded
    (:func:`results_folder`)."""
    from structablate.secrets import refuse_secrets

    refuse_secrets(config, source)
    validate(config, source)
    settings = build_settings(Settings, config)
    return replace(settings, results=results_folder(settings, source))


def corpus_folders(corpus: CorpusSettings) -> list[str]:
    """The folders a corpus reads every file under: a user corpus's folders, and for a glob
    the folder before its first wildcard (``~`` expanded, not resolved). QASPER and
    Wikipedia corpora read named files only, so they have none."""
    import glob
    import os

    if not isinstance(corpus, UserCorpus):
        return []
    out = []
    for spec in [corpus.path] if isinstance(corpus.path, str) else list(corpus.path):
        p = os.path.expanduser(spec)
        if glob.has_magic(p):
            parts = []
            for part in p.split("/"):
                if glob.has_magic(part):
                    break
                parts.append(part)
            out.append("/".join(parts) or ("/" if p.startswith("/") else "."))
        elif os.path.isdir(p):
            out.append(p)
    return out


def results_folder(settings: Settings, source: str = "config") -> str:
    """``settings.results`` with ``~`` expanded (as corpus paths are), after the checks every
    run needs before its first job: not empty, not the filesystem root, and neither inside,
    equal to, nor containing a folder a user corpus reads (the next run would read its own
    outputs as documents and overwrite them). Relative paths and symbolic links are resolved
    against the working directory, which is the workflow's (``snakemake --directory``)."""
    from pathlib import Path

    raw = settings.results
    if not raw.strip():
        raise ConfigError(f"{source}: results: is empty; name the folder every output is "
                          "written under (e.g. results), since an empty path would write at "
                          "the filesystem root")
    expanded = str(Path(raw).expanduser())
    real = Path(expanded).resolve()
    if real == Path(real.anchor):
        raise ConfigError(f"{source}: results: {raw!r} is the filesystem root; name a folder "
                          "for the outputs (e.g. results)")
    for name, corpus in settings.corpora.items():
        for folder in corpus_folders(corpus):
            f = Path(folder).resolve()
            if real == f or f in real.parents or real in f.parents:
                how = ("is" if real == f else "is inside" if f in real.parents
                       else "contains")
                raise ConfigError(
                    f"{source}: results: the results folder {raw!r} ({real}) {how} the folder "
                    f"{folder!r} ({f}) that corpora.{name}.path reads; a run would read its own "
                    "outputs as documents and overwrite them. Put results outside the corpus "
                    "folder")
    return expanded
