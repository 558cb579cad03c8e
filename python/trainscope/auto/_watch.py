"""Runs a function when a top-level module is first imported, without importing it.

A finder placed first on ``sys.meta_path`` answers only for the watched name. It removes itself,
runs the `before` callback (which may install finders of its own: they are asked next), asks the
other finders for the real spec and wraps its loader, so the `after` callback runs once the
module's code has run completely (``import torch`` has returned everything the script will
use). Costs nothing for other imports but one string comparison.

Standalone on purpose (no import of the trainscope package): the boot folder's sitecustomize
loads this file by its path, so a Python process that never imports torch or smdebug does not
pay for importing trainscope.
"""

import importlib.abc
import sys


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, name, after, before):
        self._name = name
        self._after = after
        self._before = before

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self._name:
            return None
        _remove(self)
        if self._before is not None:
            self._before()
        spec = None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        if (self._after is None or spec is None or spec.loader is None
                or not hasattr(spec.loader, "exec_module")):
            return spec
        spec.loader = _Loader(spec.loader, self._after)
        return spec


class _Loader(importlib.abc.Loader):
    """The real loader, and the callback after its exec_module."""

    def __init__(self, loader, callback):
        self._loader = loader
        self._callback = callback

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        # The module's __spec__.loader is this wrapper: give it back the real one first, so
        # importlib.reload and resource readers see what they expect.
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._loader
        self._loader.exec_module(module)
        self._callback()

    def __getattr__(self, name):  # get_resource_reader, is_package, get_code ...
        return getattr(self._loader, name)


def _remove(finder):
    try:
        sys.meta_path.remove(finder)
    except ValueError:
        pass


def call_after_import(name, callback):
    """Calls `callback()` once, right after the first import of top-level module `name`
    completes (at once if it is imported already)."""
    if name in sys.modules:
        callback()
        return
    sys.meta_path.insert(0, _Finder(name, callback, None))


def call_before_import(name, callback):
    """Calls `callback()` once, when top-level module `name` is first looked for, before any
    finder is asked (at once if it is imported already)."""
    if name in sys.modules:
        callback()
        return
    sys.meta_path.insert(0, _Finder(name, None, callback))
