"""Hide the optional extras' modules and distributions from this interpreter.

Self-contained (standard library only): tests/hermetic.py calls :func:`install` in the pytest
process and copies this file as ``sitecustomize.py`` into a folder it puts on ``PYTHONPATH``,
so every Python child of the suite runs it at start-up. The names come from the environment
(:data:`MODULES_ENV`, :data:`DISTS_ENV`: comma-separated).

Hidden means what a machine without them shows: ``import x`` raises ``ModuleNotFoundError``,
``importlib.util.find_spec("x")`` returns None, and ``importlib.metadata`` finds no
distribution of that name (libraries such as transformers probe optional packages both ways).
Every finder of ``sys.meta_path`` is wrapped, so no finder can see a hidden name.
"""

import os
import re
import sys

MODULES_ENV = "STRUCTABLATE_TEST_HIDDEN_MODULES"
DISTS_ENV = "STRUCTABLATE_TEST_HIDDEN_DISTS"


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


class _Hiding:
    """A meta path finder that answers for ``inner`` except for hidden names."""

    def __init__(self, inner, modules, dists):
        self.inner, self.modules, self.dists = inner, modules, dists

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.modules:
            return None
        find = getattr(self.inner, "find_spec", None)
        return find(name, path, target) if find else None

    def find_distributions(self, *args, **kwargs):
        find = getattr(self.inner, "find_distributions", None)
        if find is None:
            return iter(())
        return (d for d in find(*args, **kwargs)
                if _norm(d.metadata["Name"] or "") not in self.dists)

    def invalidate_caches(self):
        inv = getattr(self.inner, "invalidate_caches", None)
        if inv:
            inv()

    def __getattr__(self, attr):
        return getattr(self.inner, attr)


def install(modules=None, dists=None):
    """Wrap every finder of ``sys.meta_path`` (names from the environment when not given)."""
    if modules is None:
        modules = os.environ.get(MODULES_ENV, "")
    if dists is None:
        dists = os.environ.get(DISTS_ENV, "")
    mods = frozenset(filter(None, modules.split(",") if isinstance(modules, str) else modules))
    dsts = frozenset(_norm(d) for d in (dists.split(",") if isinstance(dists, str) else dists)
                     if d)
    if not mods and not dsts:
        return
    sys.meta_path[:] = [f if isinstance(f, _Hiding) else _Hiding(f, mods, dsts)
                        for f in sys.meta_path]
    sys.path_importer_cache.clear()


if __name__ == "sitecustomize":
    install()
