"""Checking a configuration: :func:`load_config_file` reads a YAML config file (naming
``file:line:col`` on a syntax error, a duplicate key, or a top level that is not a mapping),
and :func:`check_config` validates a mapping through the plan and returns the settings with
every default filled, as plain data. The settings themselves are :mod:`structablate.settings`;
the grid and paths are :mod:`structablate.plan`.

``python -m structablate.config FILE [FILE …]`` checks config files without Snakemake (later
files override earlier ones key by key, like ``snakemake --configfile a.yaml b.yaml``): it is
the way to see the line of a YAML error in a ``--configfile``, which Snakemake reads before
the workflow and reports without file or line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from structablate.errors import ConfigError

__all__ = ["ConfigError", "check_config", "check_config_files", "check_configfile_paths",
           "cli_config_values", "load_config_file"]


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key given twice in one mapping (PyYAML, and so
    Snakemake, would silently keep the last one)."""


def _mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    # only keys written in this mapping count: a merge key (``<<: *defaults``) brings in keys
    # that the mapping's own keys may override, which is what YAML merge keys are for
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            first = seen[key].start_mark
            raise yaml.constructor.ConstructorError(
                "while reading the mapping", node.start_mark,
                f"found the key {key!r} a second time (first on line {first.line + 1}); YAML "
                "keeps only the last, so one of them would be silently ignored",
                key_node.start_mark)
        seen[key] = key_node
    loader.flatten_mapping(node)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The mapping in the YAML (or JSON) config file ``path``.

    :class:`ConfigError` names ``path:line:col`` for a YAML syntax error or a key given twice
    in one mapping, and ``path`` for a missing or unreadable file, a file that is not UTF-8, or
    a top level that is not a mapping of keys (an empty file is an empty mapping)."""
    where = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the config file ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{where}:{line}: the config file is not UTF-8 (byte "
                          f"0x{raw[exc.start]:02x}); save it as UTF-8") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark, ctx = exc.problem_mark or exc.context_mark, exc.context_mark
        pos = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        what = exc.problem or exc.context or "unreadable"
        if exc.problem and exc.context and ctx is not None and ctx is not mark:
            what += f" ({exc.context} that starts at line {ctx.line + 1}, column " \
                    f"{ctx.column + 1})"
        raise ConfigError(f"{where}{pos}: invalid YAML: {what}"
                          + _tab_hint(text, mark)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: YAML error: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: the configuration must be a mapping of keys (corpora:, "
                          f"embedders:, …) at the top level, not a {type(data).__name__}")
    return data


CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
"""The extensions of a config file (what a ``--configfile`` path not ending in one of them is
taken for: a target written after ``--configfile``)."""


def _shown(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the working folder when it lies below it (Snakemake hands the
    workflow absolute config paths), else as it is."""
    p = os.path.abspath(path)
    rel = os.path.relpath(p)
    return p if rel == ".." or rel.startswith(".." + os.sep) else rel


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_configfile_paths(paths: Sequence[str | os.PathLike[str]],
                           results: object = "results") -> None:
    """Refuse ``--configfile`` paths that look like targets, naming each and the command in
    target-first form.

    ``snakemake --configfile my.yaml results/mydocs/funnel.json`` hands every path after
    ``--configfile`` to it, the target too: a JSON output of an earlier run is then merged
    into the configuration. A path under the results folder (``results``: the configuration's
    key, relative to the working folder) or one that does not end in ``.yaml``, ``.yml`` or
    ``.json`` is taken for such a target. (A target that does not exist yet, or that Snakemake
    cannot read as YAML, stops inside Snakemake before the workflow: docs/refusals.md.)"""
    folder = results if isinstance(results, str) and results.strip() else "results"
    folder = os.path.expanduser(folder)
    # a results folder that holds the working folder (results: .) says nothing of a path
    apart = not _inside(os.getcwd(), folder)
    targets: list[tuple[str, str]] = []
    for p in paths:
        shown = _shown(p)
        if apart and _inside(os.fspath(p), folder):
            targets.append((shown, f"an output under the results folder ({folder}), not a "
                                   "configuration"))
        elif not os.fspath(p).lower().endswith(CONFIG_SUFFIXES):
            targets.append((shown, "not a config file (a config file ends in .yaml, .yml or "
                                   ".json), so most likely a target"))
    if not targets:
        return
    named = {t for t, _ in targets}
    configs = [_shown(p) for p in paths if _shown(p) not in named] or ["my.yaml"]
    raise ConfigError(
        "\n".join(f"{t}: given to --configfile, but it is {why}" for t, why in targets)
        + "\n--configfile takes every path that follows it, so a target written after it is "
        "read as a config file. Put the targets first: snakemake --cores all "
        + " ".join(t for t, _ in targets) + " --configfile " + " ".join(configs))


def _tab_hint(text: str, mark: Any) -> str:
    if mark is None:
        return ""
    lines = text.splitlines()
    line = lines[mark.line] if mark.line < len(lines) else ""
    return " (YAML indentation must use spaces, not tabs)" if "\t" in line[: mark.column + 1] \
        else ""


def cli_config_values(config: dict[str, Any], cli: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with the values Snakemake's ``--config`` gave (``cli``, key by key) read as
    a YAML file would read them, changed in place and returned.

    Snakemake parses ``--config key=value`` with ``int``, ``float``, a boolean parser and then
    PyYAML's *base* loader, which leaves every scalar inside a list or mapping a string:
    ``statistics={bootstrap_iters: 300}`` arrives as ``{"bootstrap_iters": "300"}``. Each such
    nested string is re-read with YAML's safe scalar rules (``300`` an int, ``0.5`` a float,
    ``true`` a bool, ``null`` None, anything else the string itself), so ``--config`` means
    what the same text means in a config file. Top-level scalars are already typed."""
    def retype(value: Any) -> Any:
        if isinstance(value, str):
            try:
                typed = yaml.safe_load(value)
            except yaml.YAMLError:
                return value
            return typed if typed is None or isinstance(typed, bool | int | float) else value
        if isinstance(value, Mapping):
            return {k: retype(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [retype(v) for v in value]
        return value

    def lay(base: dict, over: Mapping[str, Any], nested: bool) -> None:
        for key, value in over.items():
            if isinstance(value, Mapping) and isinstance(base.get(key), dict):
                lay(base[key], value, True)
            elif nested or isinstance(value, Mapping | list | tuple):
                base[key] = retype(value)

    lay(config, cli, False)
    return config


def _merge(base: dict, over: Mapping) -> dict:
    """``over`` laid over ``base`` key by key, nested mappings merged (Snakemake's rule for
    several ``--configfile``)."""
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


def check_config(config: Mapping[str, Any], source: str = "config") -> dict[str, Any]:
    """The validated configuration with defaults filled; :class:`ConfigError` naming the key
    path (and ``source``) otherwise."""
    from structablate.plan import Plan
    from structablate.settings import dump

    if not isinstance(config, Mapping):
        raise ConfigError(f"{source}: the configuration must be a mapping of keys at the top "
                          f"level, not a {type(config).__name__}")
    return dump(Plan.from_config(config, source).settings)


def check_config_files(paths: Sequence[str | os.PathLike[str]]) -> dict[str, Any]:
    """Read ``paths`` (later ones override earlier ones key by key) and check the merged
    configuration like the workflow does before any job (:func:`check_config`)."""
    merged: dict[str, Any] = {}
    for p in paths:
        _merge(merged, load_config_file(p))
    return check_config(merged, ", ".join(os.fspath(p) for p in paths))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m structablate.config CONFIG.yaml [MORE.yaml …]\n"
              "Checks config files as the workflow does before any job; names file:line on a "
              "YAML error and the key path on a bad value.")
        return 0 if args else 2
    try:
        check_config_files(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"ok: {', '.join(args)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
