"""The import hook behind trainscope.smdebug: `smdebug` and `smdebug.*` resolve to the files of
trainscope/smdebug/alias/.

`smdebug.a.b` is loaded from alias/a/b.py (or alias/a/b/__init__.py) as a module named
`smdebug.a.b`, with the standard source loader; those files only re-export trainscope's objects,
so `smdebug.pytorch.Hook is trainscope.pytorch.Hook`. A name with no alias file is not found
(ModuleNotFoundError), as a missing module of a real package would be.

Thread safety: the finder holds no mutable state; install/uninstall are guarded by the import
lock's callers (call them from one thread, as one edits sys.meta_path).
"""

import importlib.machinery
import importlib.util
import os
import sys

ALIAS_ROOT = "smdebug"
ALIAS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "alias")


class AliasFinder:
    """A meta-path finder for `smdebug` and its submodules (and nothing else)."""

    # Marks the finder so a second install (even from a reloaded module) finds the first.
    trainscope_smdebug_alias = True

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname != ALIAS_ROOT and not fullname.startswith(ALIAS_ROOT + "."):
            return None
        parts = fullname.split(".")[1:]
        base = os.path.join(ALIAS_DIR, *parts)
        package_init = os.path.join(base, "__init__.py")
        if os.path.isfile(package_init):
            loader = importlib.machinery.SourceFileLoader(fullname, package_init)
            return importlib.util.spec_from_file_location(
                fullname, package_init, loader=loader, submodule_search_locations=[base])
        if parts and os.path.isfile(base + ".py"):
            loader = importlib.machinery.SourceFileLoader(fullname, base + ".py")
            return importlib.util.spec_from_file_location(fullname, base + ".py", loader=loader)
        # Not aliased: None. The other finders search the parent's __path__, which is the alias
        # folder, so a real smdebug's file never fills the gap (no two implementations mixed).
        return None

    @classmethod
    def invalidate_caches(cls):
        pass


def finder_installed():
    return any(getattr(f, "trainscope_smdebug_alias", False) for f in sys.meta_path)


def is_alias_module(module):
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None) or ""
    return origin.startswith(ALIAS_DIR + os.sep)


def smdebug_modules():
    """Names in sys.modules that are `smdebug` or below it."""
    return [n for n in list(sys.modules) if n == ALIAS_ROOT or n.startswith(ALIAS_ROOT + ".")]


def real_smdebug_spec():
    """The spec of an smdebug that the other finders would import (None if there is none)."""
    module = sys.modules.get(ALIAS_ROOT)
    if module is not None and not is_alias_module(module):
        return module.__spec__
    for finder in sys.meta_path:
        if getattr(finder, "trainscope_smdebug_alias", False):
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(ALIAS_ROOT, None)
        except Exception:  # a broken third-party finder must not break install()
            continue
        if spec is not None:
            return spec
    return None
