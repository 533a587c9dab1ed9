"""The machinery under the settings: typed frozen dataclasses as the one statement of every
config key, its type, default, range and meaning.

A settings class is a ``@dataclass(frozen=True, kw_only=True)`` whose fields are made with
:func:`setting`. From the class alone this module derives

* the JSON schema of its block (:func:`json_schema`; strict: ``additionalProperties: false``
  everywhere, so an unknown key is refused with its path),
* the typed value of a validated YAML block (:func:`build`), defaults filled,
* the plain data of a value (:func:`dump`), and the part of it that can change results
  (:func:`dump_outputs`: fields marked ``runtime=True`` — device, thread counts, retry
  timings — are left out, so Snakemake does not rerun work when only they change).

Supported field types: ``bool``, ``int``, ``float``, ``str``, ``Literal[...]``, ``X | None``,
``tuple[X, ...]`` (a YAML list), ``tuple[X, Y]`` (a list of fixed length), ``dict[str, X]``
(a mapping keyed by user names), nested settings classes, unions of settings classes told apart
by a ``Literal`` field (``type``, ``mode``), and unions of a scalar or list with a settings
class or mapping.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, get_args, get_origin

_META = "structablate"

SEED_MAX = 2**32 - 1
"""Every seed is an integer in ``[0, 2^32 - 1]``: numpy refuses negative seeds and llama.cpp
takes 32 bits."""


def setting(default: Any = dataclasses.MISSING, *, doc: str, runtime: bool = False,
            **constraints: Any) -> Any:
    """A settings field: ``default`` (omit for a required key), a one-line ``doc``, and JSON
    schema ``constraints`` (``minimum``, ``maximum``, ``exclusiveMinimum``, ``pattern``,
    ``minLength``, ``minItems``, ``maxItems``, ``uniqueItems``, ``propertyNames``,
    ``minProperties``). ``runtime=True`` marks a key that cannot change any output (it is kept
    out of rerun triggers). Mutable defaults (dicts, settings objects) are copied per instance.
    """
    meta = {_META: {"doc": doc, "runtime": runtime, "constraints": constraints}}
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata=meta)
    if isinstance(default, dict) or dataclasses.is_dataclass(default):
        return dataclasses.field(default_factory=lambda: _copy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def default_of(cls: type, name: str) -> Any:
    """The default of field ``name`` of settings class ``cls`` (a fresh copy for mapping and
    settings defaults), for library functions whose keyword defaults follow the settings:
    ``def chunk(..., t_max: int = default_of(ChunkingSettings, "t_max"))``. A scalar default is
    also the class attribute itself (``ChunkingSettings.t_max``). Raises ``KeyError`` for an
    unknown field and ``ValueError`` for a required one."""
    for f in dataclasses.fields(cls):
        if f.name != name:
            continue
        if f.default is not dataclasses.MISSING:
            return f.default
        if f.default_factory is not dataclasses.MISSING:
            return f.default_factory()
        raise ValueError(f"{cls.__name__}.{name} is required: it has no default")
    raise KeyError(f"{cls.__name__} has no field {name!r}")


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value  # frozen dataclasses and tuples are immutable


def _meta(f: dataclasses.Field) -> dict[str, Any]:
    return f.metadata.get(_META, {"doc": "", "runtime": False, "constraints": {}})


def fields_of(cls: type) -> list[tuple[dataclasses.Field, Any]]:
    """The fields of a settings class with their resolved type annotations."""
    hints = typing.get_type_hints(cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls)]


def _is_settings(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _union_args(tp: Any) -> tuple[Any, ...] | None:
    if get_origin(tp) in (typing.Union, types.UnionType):
        return get_args(tp)
    return None


def discriminator(cls: type) -> tuple[str, tuple[str, ...]] | None:
    """The ``Literal`` field that tells a settings class apart in a union (``type``, ``mode``)."""
    for f, tp in fields_of(cls):
        if get_origin(tp) is Literal and f.default is dataclasses.MISSING:
            return f.name, tuple(get_args(tp))
    return None


# ------------------------------------------------------------------------------- JSON schema


def _plain(value: Any) -> Any:
    """A default as JSON data (tuples as lists, settings objects as mappings)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dump(value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of one annotation; settings classes go to ``defs`` by name."""
    if tp is Any:
        return {}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if tp is type(None):
        return {"type": "null"}
    if _is_settings(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # placeholder against recursion
            defs[tp.__name__] = class_schema(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    union = _union_args(tp)
    if union is not None:
        return _union_schema(union, defs)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": type_schema(args[0], defs)}
        return {"type": "array", "prefixItems": [type_schema(a, defs) for a in args],
                "minItems": len(args), "maxItems": len(args), "items": False}
    if origin in (dict, Mapping):
        return {"type": "object", "additionalProperties": type_schema(args[1], defs)}
    raise TypeError(f"settings: unsupported field type {tp!r}")


def _json_type(tp: Any) -> str:
    """The JSON type a value of annotation ``tp`` has."""
    if tp is bool:
        return "boolean"
    if tp is int:
        return "integer"
    if tp is float:
        return "number"
    if tp is str:
        return "string"
    if tp is type(None):
        return "null"
    if _is_settings(tp) or get_origin(tp) in (dict, Mapping):
        return "object"
    if get_origin(tp) is tuple:
        return "array"
    if get_origin(tp) is Literal:
        return _json_type(type(get_args(tp)[0]))
    raise TypeError(f"settings: unsupported field type {tp!r}")


def _objects_schema(options: list[Any], defs: dict[str, Any]) -> dict[str, Any]:
    """One object schema for several settings classes, told apart without ``oneOf`` (whose
    errors hide the real one): by a ``Literal`` field (``type: qasper``), else by the first
    required key of the one class that has required keys."""
    if len(options) == 1:
        return type_schema(options[0], defs)
    discs = [discriminator(c) for c in options]
    if all(discs) and len({d[0] for d in discs}) == 1:
        key = discs[0][0]
        values = [v for d in discs for v in d[1]]
        branches = [{"if": {"properties": {key: {"enum": list(d[1])}}, "required": [key]},
                     "then": type_schema(c, defs)} for c, d in zip(options, discs, strict=True)]
        return {"type": "object", "required": [key], "properties": {key: {"enum": values}},
                "allOf": branches}
    needing = [c for c in options if any(
        f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        for f in dataclasses.fields(c))]
    if len(options) == 2 and len(needing) == 1:
        first = needing[0]
        other = options[1] if options[0] is first else options[0]
        key = next(f.name for f in dataclasses.fields(first)
                   if f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING)
        return {"if": {"required": [key]}, "then": type_schema(first, defs),
                "else": type_schema(other, defs)}
    return {"oneOf": [type_schema(c, defs) for c in options]}


def _union_schema(union: tuple[Any, ...], defs: dict[str, Any]) -> dict[str, Any]:
    """A union as one ``type`` list with an ``if``/``then`` per JSON type, so a value is
    checked against the one branch its JSON type selects (precise error paths)."""
    by_type: dict[str, list[Any]] = {}
    for a in union:
        by_type.setdefault(_json_type(a), []).append(a)
    if "integer" in by_type and "number" in by_type:
        raise TypeError(f"settings: ambiguous union {union!r}")
    if len(by_type) == 1:
        (json_type, options), = by_type.items()
        if json_type == "object":
            return _objects_schema(options, defs)
        return {"oneOf": [type_schema(a, defs) for a in options]}
    branches = []
    for json_type, options in by_type.items():
        if json_type == "object":
            sub = _objects_schema(options, defs)
        elif len(options) == 1:
            sub = type_schema(options[0], defs)
        else:
            sub = {"oneOf": [type_schema(a, defs) for a in options]}
        sub = {k: v for k, v in sub.items() if k != "type" or isinstance(v, list)}
        if sub:
            branches.append({"if": {"type": json_type}, "then": sub})
    out: dict[str, Any] = {"type": list(by_type)}
    if branches:
        out["allOf"] = branches
    return out


def class_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    """The object schema of a settings class (strict: no additional properties)."""
    props: dict[str, Any] = {}
    required: list[str] = []
    for f, tp in fields_of(cls):
        m = _meta(f)
        sub = dict(type_schema(tp, defs))
        sub.update(m["constraints"])
        if m["doc"]:
            sub["description"] = m["doc"]
        if f.default is not dataclasses.MISSING:
            sub["default"] = _plain(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            sub["default"] = _plain(f.default_factory())
        else:
            required.append(f.name)
        props[f.name] = sub
    out: dict[str, Any] = {"type": "object", "additionalProperties": False,
                           "properties": props}
    doc = (cls.__doc__ or "").strip().split("\n\n")[0]
    if doc:
        out["description"] = " ".join(doc.split())
    if required:
        out["required"] = required
    return out


def json_schema(cls: type, *, title: str = "") -> dict[str, Any]:
    """The whole JSON schema (draft 2020-12) of a root settings class."""
    defs: dict[str, Any] = {}
    root = class_schema(cls, defs)
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    if title:
        schema["title"] = title
    schema.update(root)
    schema["$defs"] = dict(sorted(defs.items()))
    return schema


# ------------------------------------------------------------------------------- build / dump


def build(tp: Any, value: Any, path: str = "") -> Any:
    """The typed value of ``value`` (already valid against :func:`type_schema` of ``tp``)."""
    if tp is Any or tp in (bool, str) or tp is type(None):
        return value
    if tp is int:
        return int(value)
    if tp is float:
        return float(value)
    if _is_settings(tp):
        return build_settings(tp, value, path)
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return value
    union = _union_args(tp)
    if union is not None:
        if value is None:
            return None
        return build(_pick(union, value), value, path)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(build(args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
        return tuple(build(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, value,
                                                                               strict=True)))
    if origin in (dict, Mapping):
        return {str(k): build(args[1], v, f"{path}.{k}") for k, v in value.items()}
    raise TypeError(f"settings: unsupported field type {tp!r}")


def _matches(tp: Any, value: Any) -> bool:
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if _is_settings(tp):
        if not isinstance(value, Mapping):
            return False
        disc = discriminator(tp)
        if disc is not None:
            return value.get(disc[0]) in disc[1]
        names = {f.name for f in dataclasses.fields(tp)}
        required = {f.name for f in dataclasses.fields(tp)
                    if f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING}
        return set(value) <= names and required <= set(value)
    origin = get_origin(tp)
    if origin is Literal:
        return value in get_args(tp)
    if origin is tuple:
        return isinstance(value, list | tuple)
    if origin in (dict, Mapping):
        return isinstance(value, Mapping)
    return False


def _pick(options: tuple[Any, ...], value: Any) -> Any:
    for tp in options:
        if _matches(tp, value):
            return tp
    raise TypeError(f"settings: {value!r} matches none of {options}")


def build_settings(cls: type, data: Mapping[str, Any] | None, path: str = "") -> Any:
    """An instance of ``cls`` from a validated mapping; missing keys take their defaults."""
    data = dict(data or {})
    kwargs = {}
    for f, tp in fields_of(cls):
        if f.name in data:
            sub = f"{path}.{f.name}" if path else f.name
            kwargs[f.name] = build(tp, data[f.name], sub)
    return cls(**kwargs)


def dump(value: Any, *, outputs_only: bool = False) -> Any:
    """Plain data (dicts, lists, scalars) of a settings value; with ``outputs_only`` the
    ``runtime`` fields are left out at every depth."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            if outputs_only and _meta(f)["runtime"]:
                continue
            out[f.name] = dump(getattr(value, f.name), outputs_only=outputs_only)
        return out
    if isinstance(value, tuple | list):
        return [dump(v, outputs_only=outputs_only) for v in value]
    if isinstance(value, dict):
        return {k: dump(v, outputs_only=outputs_only) for k, v in value.items()}
    return value


def dump_outputs(value: Any) -> Any:
    """:func:`dump` without the ``runtime`` fields: what can change a rule's outputs."""
    return dump(value, outputs_only=True)


def runtime_keys(cls: type, prefix: str = "") -> list[str]:
    """Dotted paths of the ``runtime`` fields of a settings class (for the docs)."""
    out = []
    for f, tp in fields_of(cls):
        name = f"{prefix}{f.name}"
        if _meta(f)["runtime"]:
            out.append(name)
        elif _is_settings(tp):
            out.extend(runtime_keys(tp, name + "."))
    return out
