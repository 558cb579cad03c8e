"""`import smdebug...` resolved to trainscope, so smdebug scripts, notebooks and tests run
unchanged.

Three ways to turn it on:

- ``python -m trainscope.smdebug [--force] script.py [args...]`` (or ``-m module [args...]``)
  runs a script with the alias installed;
- ``TRAINSCOPE_SMDEBUG_ALIAS=1`` in the environment of a command run by ``trainscope run``
  (its bootstrap calls :func:`install`); ``TRAINSCOPE_SMDEBUG_ALIAS=force`` forces it;
- ``import trainscope.smdebug; trainscope.smdebug.install()`` in code, e.g. a notebook's first
  cell, before the first ``import smdebug``.

The modules under ``smdebug`` are the files of ``trainscope/smdebug/alias/``; each only
re-exports trainscope's objects (docs/compat.md lists them and every deliberate difference).

A real smdebug that is installed is never shadowed silently: :func:`install` refuses (returns
False, with a warning) unless ``force=True``. Forcing it also drops the real smdebug's modules
already imported from ``sys.modules``, so later imports get trainscope; objects already taken
from them stay what they were.
"""

import os
import sys
import warnings

from . import _finder

ENV_VAR = "TRAINSCOPE_SMDEBUG_ALIAS"

__all__ = ["ENV_VAR", "install", "installed", "uninstall"]


def _env_force():
    return os.environ.get(ENV_VAR, "").strip().lower() == "force"


def installed():
    """True if `import smdebug` resolves to trainscope in this process."""
    return _finder.finder_installed()


def install(force=None):
    """Makes `import smdebug...` resolve to trainscope's modules; returns True if it now does.

    Idempotent and cheap (a scan of sys.meta_path, and once a look for a real smdebug on
    sys.path). force=None reads TRAINSCOPE_SMDEBUG_ALIAS ("force" forces). Without force, a real
    smdebug that can be imported is left alone: a warning says so and the result is False.
    Never raises for that reason, so a bootstrap can call it unguarded.
    """
    if _finder.finder_installed():
        return True
    if force is None:
        force = _env_force()
    if not force:
        spec = _finder.real_smdebug_spec()
        if spec is not None:
            where = spec.origin or ", ".join(spec.submodule_search_locations or []) or "?"
            warnings.warn(
                f"trainscope.smdebug: a real smdebug is installed ({where}); `import smdebug` "
                "keeps importing it. Uninstall it (pip uninstall smdebug), or force the alias: "
                f"install(force=True), {ENV_VAR}=force, or python -m trainscope.smdebug --force",
                RuntimeWarning, stacklevel=2)
            return False
    for name in _finder.smdebug_modules():
        if not _finder.is_alias_module(sys.modules[name]):
            del sys.modules[name]
    sys.meta_path.insert(0, _finder.AliasFinder)
    return True


def uninstall():
    """Undoes install(): removes the finder and the alias modules from sys.modules."""
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not getattr(f, "trainscope_smdebug_alias", False)]
    for name in _finder.smdebug_modules():
        if _finder.is_alias_module(sys.modules[name]):
            del sys.modules[name]
