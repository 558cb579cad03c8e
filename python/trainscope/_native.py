"""Loads the C++ extension trainscope._core, with a message that says how to build it."""

_core = None
_error = None


def load():
    """Returns the trainscope._core module; raises ImportError saying how to build it."""
    global _core, _error
    if _core is not None:
        return _core
    try:
        from . import _core as core  # noqa: PLC0415
    except ImportError as e:
        _error = e
        raise ImportError(
            f"trainscope's C++ extension trainscope._core could not be imported ({e}). "
            "Install the package with `pip install .` from the source tree, or for development "
            "build it with `cmake -S . -B build -DTRAINSCOPE_BUILD_PYTHON=ON && "
            "cmake --build build --target _core` and put python/ on PYTHONPATH."
        ) from e
    _core = core
    return core


def available():
    """(True, module path) if the extension imports, else (False, the import error text)."""
    try:
        core = load()
    except ImportError:
        return False, str(_error)
    return True, getattr(core, "__file__", "?")
