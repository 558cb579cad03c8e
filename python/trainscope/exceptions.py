"""Exceptions of trainscope, with smdebug's names and constructor signatures.

Every class derives from :class:`TrainscopeError` (also reachable as ``SMDebugError``), so code
written against ``smdebug.exceptions`` works after changing the import. Classes that smdebug
derives from a builtin (``SMDebugValueError`` from ``ValueError``...) do so here too.
"""

from .modes import ModeKeys


class TrainscopeError(Exception):
    """Base of every trainscope exception."""


SMDebugError = TrainscopeError


class SMDebugCustomerError(TrainscopeError):
    pass


class SMDebugTypeError(TrainscopeError, TypeError):
    pass


class SMDebugRuntimeError(TrainscopeError, RuntimeError):
    pass


class SMDebugNotImplementedError(TrainscopeError, NotImplementedError):
    pass


class SMDebugValueError(TrainscopeError, ValueError):
    pass


def _mode_name(mode):
    return getattr(mode, "name", str(mode))


class InvalidCollectionConfiguration(TrainscopeError):
    def __init__(self, c_name):
        super().__init__(c_name)
        self.c_name = c_name

    def __str__(self):
        return (
            f"Collection {self.c_name} has not been configured. "
            "Please fill in tensor_names or include_regex"
        )


class StepNotYetAvailable(TrainscopeError):
    def __init__(self, step, mode):
        super().__init__(step, mode)
        self.step = step
        self.mode = mode

    def __str__(self):
        return f"Step {self.step} of mode {_mode_name(self.mode)} not yet available"


class MissingCollectionFiles(TrainscopeError):
    def __init__(self):
        super().__init__()

    def __str__(self):
        return "Training job has ended. All the collection files could not be loaded"


class IndexReaderException(TrainscopeError):
    def __init__(self, message):
        super().__init__(message)
        self.message = message

    def __str__(self):
        return self.message


class StepUnavailable(TrainscopeError):
    def __init__(self, step, mode):
        super().__init__(step, mode)
        self.step = step
        self.mode = mode

    def __str__(self):
        return (f"Step {self.step} of mode {_mode_name(self.mode)} is not available as it was "
                "not saved")


class TensorUnavailableForStep(TrainscopeError):
    def __init__(self, tname, step, mode=ModeKeys.GLOBAL, has_reductions=False):
        super().__init__(tname, step, mode, has_reductions)
        self.step = step
        self.mode = mode
        self.tname = tname
        self.has_reductions = has_reductions

    def __str__(self):
        msg = (
            f"Value for tensor {self.tname} is not available for step {self.step} "
            f"with mode {_mode_name(self.mode)} as it was not saved."
        )
        if self.has_reductions:
            msg += (
                " This tensor has reductions saved for this step. "
                "You might want to query for the reductions."
            )
        return msg


class ShapeUnavailableForStep(TrainscopeError):
    def __init__(self, tname, step, mode=ModeKeys.GLOBAL):
        super().__init__(tname, step, mode)
        self.step = step
        self.mode = mode
        self.tname = tname

    def __str__(self):
        return (
            f"Shape for tensor {self.tname} is not available for step {self.step} "
            f"with mode {_mode_name(self.mode)} as it was not saved."
        )


class TensorUnavailable(TrainscopeError):
    def __init__(self, tname):
        super().__init__(tname)
        self.tname = tname

    def __str__(self):
        return f"Tensor {self.tname} was not saved."


class InvalidWorker(TrainscopeError):
    def __init__(self, worker):
        super().__init__(worker)
        self.worker = worker

    def __str__(self):
        return f"Invalid Worker: {self.worker}"


class NoMoreProfilerData(TrainscopeError):
    def __init__(self, timestamp):
        super().__init__(timestamp)
        self.timestamp = timestamp
        self.msg = f"Looking for timestamp {timestamp} and reached end of training."

    def __str__(self):
        return self.msg


class NoMoreData(TrainscopeError):
    def __init__(self, step, mode, last_step):
        super().__init__(step, mode, last_step)
        self.step = step
        self.mode = mode
        self.last_step = last_step
        self.msg = (
            f"Looking for step {step} of mode {_mode_name(mode)} and reached "
            f"end of training. Max step available is {last_step}"
        )

    def __str__(self):
        return self.msg


class RuleEvaluationConditionMet(TrainscopeError):
    def __init__(self, rule_name, step, end_of_rule=False):
        super().__init__(rule_name, step, end_of_rule)
        self.rule_name = rule_name
        self.step = step
        self.end_of_rule = end_of_rule

    def __str__(self):
        return (
            f"Evaluation of the rule {self.rule_name} at step {self.step} resulted in the "
            "condition being met"
        )


class InsufficientInformationForRuleInvocation(TrainscopeError):
    def __init__(self, rule_name, message):
        super().__init__(rule_name, message)
        self.rule_name = rule_name
        self.message = message

    def __str__(self):
        return f"Insufficient information to invoke rule {self.rule_name}: {self.message}"


# trainscope's own, for failures smdebug has no class for.


class TrialCorruptionError(IndexReaderException):
    """Bytes in the trial do not parse or fail a checksum (the message names file and offset)."""


class TrialIOError(SMDebugRuntimeError, OSError):
    """The operating system refused a file operation on the trial."""


class TrialNotReady(TrainscopeError, TimeoutError):
    """create_trial(..., timeout=T) gave up: no collections file appeared within T seconds."""

    def __init__(self, path, timeout):
        super().__init__(path, timeout)
        self.path = path
        self.timeout = timeout

    def __str__(self):
        return (
            f"no collections file appeared in {self.path}/collections/000000000/ within "
            f"{self.timeout} s: is the training job writing to this path?"
        )


__all__ = [name for name, obj in list(globals().items())
           if isinstance(obj, type) and issubclass(obj, BaseException)]


class TrainingStopped(SystemExit):
    """Raised by the hook at a step boundary when a rule's stop action (or a person) asked the
    training to stop: the trial is flushed and closed first. A SystemExit with code 0, so the
    process ends cleanly and `except Exception` in a training loop does not swallow it."""

    def __init__(self, reason=""):
        super().__init__(0)
        self.reason = reason

    def __str__(self):
        return f"training stopped: {self.reason}"
