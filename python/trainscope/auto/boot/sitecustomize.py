"""trainscope's bootstrap: `trainscope run` puts this folder first on PYTHONPATH, so every Python
process of the training runs this at start-up (Python imports ``sitecustomize`` by itself).

- TRAINSCOPE_AUTO=1: the automatic mode (trainscope.auto) is installed right after the
  script's ``import torch``;
- ``import smdebug`` resolves to trainscope (trainscope.smdebug.install, run at the first
  ``import smdebug``) unless TRAINSCOPE_SMDEBUG_ALIAS=0 or a real smdebug is installed.
- Neither imports trainscope before it is needed: a process that imports neither torch nor
  smdebug pays a millisecond.
- Then the sitecustomize this one hides (the next one on sys.path, e.g. the distribution's) runs,
  as it would have without trainscope.

Nothing here may stop Python from starting: every failure is printed once and ignored.
"""


def _trainscope_boot():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))

    def say(text):
        print(f"trainscope: bootstrap: {text}", file=sys.stderr, flush=True)

    # The import watcher, loaded by its path: importing the trainscope package (numpy...) waits
    # until the training imports torch or smdebug.
    watch = None
    try:
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "_trainscope_boot_watch", os.path.join(os.path.dirname(here), "_watch.py"))
        watch = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(watch)
    except Exception as e:
        say(f"off: {type(e).__name__}: {e}")

    def start_auto():
        try:
            import trainscope.auto

            trainscope.auto.install()
        except Exception as e:
            say(f"automatic mode off: {type(e).__name__}: {e}")

    flag = os.environ.get("TRAINSCOPE_AUTO", "").strip().lower()
    if watch is not None and flag in ("1", "true", "on", "yes"):
        watch.call_after_import("torch", start_auto)

    alias = os.environ.get("TRAINSCOPE_SMDEBUG_ALIAS", "").strip().lower()

    def install_alias():
        try:
            import warnings

            import trainscope.smdebug as _alias

            with warnings.catch_warnings():
                if not alias:  # not asked for: a real smdebug wins without a word
                    warnings.simplefilter("ignore")
                _alias.install()
        except ImportError:
            pass  # this trainscope has no smdebug alias
        except Exception as e:
            say(f"smdebug alias off: {type(e).__name__}: {e}")

    if watch is not None and alias not in ("0", "false", "off", "no"):
        watch.call_before_import("smdebug", install_alias)

    # The next sitecustomize on the path, run in this module's namespace.
    try:
        import importlib.machinery

        def same(p):
            try:
                return os.path.samefile(p or os.curdir, here)
            except OSError:
                return False

        path = [p for p in sys.path if not same(p)]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is not None and spec.loader is not None and spec.origin and not same(
                os.path.dirname(spec.origin)):
            code = spec.loader.get_code("sitecustomize")
            if code is not None:
                g = globals()
                g["__file__"] = spec.origin
                try:
                    exec(code, g)
                finally:
                    g["__file__"] = os.path.join(here, "sitecustomize.py")
    except Exception as e:
        say(f"the next sitecustomize failed: {type(e).__name__}: {e}")


_trainscope_boot()
del _trainscope_boot
