"""Custom Python rules under ``trainscope run --rule-file FILE.py:CLASS[:KEY=VALUE,...]``.

A custom rule is a class written against smdebug's Rule API (:class:`trainscope.rules.Rule`, or
``smdebug.rules.Rule`` through the ``smdebug`` alias). ``trainscope run`` uses this module twice:

- ``python -m trainscope.rules.custom check FILE CLASS PARAMS_JSON``, before the training starts:
  the file is imported, the class found and checked (a Rule subclass), the parameters matched to
  its ``__init__``. Exit 0 with ``{"rule", "parameters"}`` on stdout, or exit 2 with one line on
  stderr naming what is wrong and what to do.
- ``python -m trainscope.rules.custom serve TRIAL FILE CLASS PARAMS_JSON``, started by the rule
  worker (``trainscope rule-worker --rule-file``), which owns the rule's statuses, status.json,
  events.jsonl, actions and time-outs as for a built-in rule (src/cli/python_rule.h). The rule is
  created on the trial, then the worker sends one line per complete global step, ``step N``, and
  this process answers one JSON line: ``{"met": bool, "end_of_rule": bool}``, ``{"nodata": "..."}``
  (the step lacks the data: smdebug's TensorUnavailable(ForStep), StepUnavailable, NoMoreData) or
  ``{"error": "ExceptionType: message", "where": "file:line in function"}``. The rule's own
  prints go to stderr: stdout carries the answers only.

Parameters come from the command line as strings, as SageMaker passes a custom rule's
``rule_parameters``; a parameter whose default is a bool, an int or a float is converted to that
type (``true``/``false``/``1``/``0`` for a bool), other values stay strings.
"""

import importlib.util
import inspect
import json
import os
import sys
import traceback

_SKIP_FIRST = 1  # base_trial: given by trainscope


class CustomRuleError(Exception):
    """A custom rule that cannot be used, with what to do."""


def load_rule_class(path, class_name):
    """The class ``class_name`` of the Python file ``path``; CustomRuleError when the file is
    missing or fails to import, the class is missing, or it is not a Rule subclass."""
    from .rule import Rule

    if not os.path.isfile(path):
        raise CustomRuleError(
            f"{path}: no such file (write FILE.py:CLASS with the path of the Python file that "
            f"defines the rule class)")
    module_name = "trainscope_custom_rule_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise CustomRuleError(f"{path}: not a Python file that can be imported (name it *.py)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    # The rule file's folder is importable, as it is for a script run from there.
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # noqa: BLE001 - any failure of the user's file is reported
        tb = traceback.extract_tb(e.__traceback__)
        where = f" (line {tb[-1].lineno} of {tb[-1].filename})" if tb else ""
        raise CustomRuleError(
            f"{path}: importing it raised {type(e).__name__}: {e}{where}; fix the file (run "
            f"`python {path}` to see the whole traceback)") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        classes = sorted(n for n, v in vars(module).items()
                         if inspect.isclass(v) and issubclass(v, Rule) and v is not Rule
                         and v.__module__ == module_name)
        found = ", ".join(classes) if classes else "none"
        raise CustomRuleError(
            f"{path}: no class named {class_name} (Rule subclasses defined there: {found}); write "
            f"FILE.py:CLASS with one of them")
    if not inspect.isclass(cls) or not _is_rule_class(cls):
        what = f"a class with bases {[b.__name__ for b in cls.__mro__[1:]]}" if inspect.isclass(
            cls) else f"a {type(cls).__name__}"
        raise CustomRuleError(
            f"{path}: {class_name} is {what}, not a Rule subclass: derive it from "
            f"trainscope.rules.Rule (or smdebug.rules.Rule) and implement invoke_at_step(step)")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise CustomRuleError(
            f"{path}: {class_name} does not implement {missing}: a rule implements "
            f"invoke_at_step(self, step), returning True when its condition is met")
    return cls


def _is_rule_class(cls):
    from .rule import Rule

    if issubclass(cls, Rule):
        return True
    # smdebug's own Rule, when smdebug is installed and the file imports it directly.
    return any(b.__name__ == "Rule" and b.__module__.startswith("smdebug.rules")
               for b in cls.__mro__)


def _convert(name, value, default, class_name):
    if isinstance(default, bool):
        low = value.strip().lower()
        if low in ("true", "1", "yes"):
            return True
        if low in ("false", "0", "no"):
            return False
        raise CustomRuleError(
            f"{class_name}: parameter {name}={value!r}: must be true or false (its default is "
            f"{default})")
    for kind in (int, float):
        if isinstance(default, kind):
            try:
                return kind(value)
            except ValueError:
                what = "an integer" if kind is int else "a number"
                raise CustomRuleError(
                    f"{class_name}: parameter {name}={value!r}: must be {what} (its default is "
                    f"{default})") from None
    return value


def bind_parameters(cls, params):
    """The keyword arguments for ``cls(base_trial, **kwargs)`` from string ``params``, and the
    parameters in effect (defaults included) as strings. CustomRuleError for an unknown
    parameter, a parameter without default that was not given, or a value of the wrong type."""
    name = cls.__name__
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        sig = None
    if sig is None:
        return dict(params), dict(params)
    formal = list(sig.parameters.values())[1:]  # self
    positional = [p for p in formal if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not positional and not any(p.kind == p.VAR_POSITIONAL for p in formal):
        raise CustomRuleError(
            f"{name}.__init__ takes no base_trial: a rule's constructor is "
            f"__init__(self, base_trial, ...) as in smdebug")
    named = [p for p in formal[_SKIP_FIRST:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    by_name = {p.name: p for p in named}
    takes_any = any(p.kind == p.VAR_KEYWORD for p in formal)
    kwargs, effective = {}, {}
    for key, value in params.items():
        p = by_name.get(key)
        if p is None and not takes_any:
            allowed = ", ".join(by_name) if by_name else "none"
            raise CustomRuleError(
                f"{name}: unknown parameter {key!r} (its parameters: {allowed}); give only "
                f"parameters of {name}.__init__, as FILE.py:{name}:KEY=VALUE,...")
        default = p.default if p is not None and p.default is not p.empty else None
        kwargs[key] = _convert(key, value, default, name) if default is not None else value
        effective[key] = value
    for p in named:
        if p.name in kwargs:
            continue
        if p.default is p.empty:
            raise CustomRuleError(
                f"{name}: parameter {p.name!r} has no default: give it, as "
                f"FILE.py:{name}:{p.name}=VALUE")
        effective[p.name] = "None" if p.default is None else str(p.default)
    return kwargs, effective


def _check(path, class_name, params):
    cls = load_rule_class(path, class_name)
    _, effective = bind_parameters(cls, params)
    return {"rule": cls.__name__, "parameters": effective}


def _answer(out, obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()


def _where(exc):
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return ""
    f = tb[-1]
    return f"{f.filename}:{f.lineno} in {f.name}"


def _serve(trial_path, path, class_name, params):
    from ..exceptions import (
        NoMoreData,
        RuleEvaluationConditionMet,
        StepUnavailable,
        TensorUnavailable,
        TensorUnavailableForStep,
    )
    from ..trials import create_trial

    # The answers go to the original stdout; anything the rule prints goes to stderr.
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        cls = load_rule_class(path, class_name)
        kwargs, effective = bind_parameters(cls, params)
        trial = create_trial(trial_path)
        rule = cls(trial, **kwargs)
    except CustomRuleError as e:
        _answer(out, {"error": str(e)})
        return 1
    except Exception as e:  # noqa: BLE001 - the rule's constructor is the user's code
        traceback.print_exc()
        _answer(out, {"error": f"{class_name}(...) raised {type(e).__name__}: {e}",
                      "where": _where(e)})
        return 1
    _answer(out, {"ready": True, "rule": cls.__name__, "parameters": effective})
    for line in sys.stdin:
        words = line.split()
        if len(words) != 2 or words[0] != "step":
            _answer(out, {"error": f"protocol: unexpected line {line.strip()!r}"})
            continue
        step = int(words[1])
        try:
            rule.invoke(step)
            _answer(out, {"met": False})
        except RuleEvaluationConditionMet as e:
            _answer(out, {"met": True, "end_of_rule": bool(getattr(e, "end_of_rule", False))})
        except (TensorUnavailableForStep, StepUnavailable, TensorUnavailable, NoMoreData) as e:
            _answer(out, {"nodata": f"{type(e).__name__}: {e}"})
        except Exception as e:  # noqa: BLE001 - reported as the rule's Error status
            if type(e).__name__ == "RuleEvaluationConditionMet":  # smdebug's own class
                _answer(out, {"met": True, "end_of_rule": bool(getattr(e, "end_of_rule", False))})
                continue
            traceback.print_exc()
            _answer(out, {"error": f"{type(e).__name__}: {e}", "where": _where(e)})
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 4 and argv[0] == "check":
        try:
            print(json.dumps(_check(argv[1], argv[2], json.loads(argv[3]))))
        except CustomRuleError as e:
            print(str(e), file=sys.stderr)
            return 2
        return 0
    if len(argv) == 5 and argv[0] == "serve":
        return _serve(argv[1], argv[2], argv[3], json.loads(argv[4]))
    print("usage: python -m trainscope.rules.custom check FILE CLASS PARAMS_JSON | "
          "serve TRIAL FILE CLASS PARAMS_JSON", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
