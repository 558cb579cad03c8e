"""The closure evaluations of optimizer steps, recorded in the trial (docs/formats/index.md,
``meta.closure_evaluations``).

``optimizer.step(closure)`` calls the closure (zero_grad, forward, loss, backward) itself, and
LBFGS calls it up to ``max_iter`` (20) times in one step, at new parameters each time. The loss
module's outputs of one step are then ``MSELoss_output_0`` ... ``MSELoss_output_19``, names that
do not say they are one loss evaluated 20 times in a row. A ``ClosureRecorder`` wraps the closure
of each optimizer step (the hook's global optimizer step pre-hook, or the automatic mode's own) so
that each call is one evaluation, notes the loss tensors saved during it, and gives the step
boundary the record of the step that ends: the optimizer steps whose closure ran twice or more
(a closure called once, as Lightning's or SGD's, says nothing that the names do not).

Here, not in trainscope.pytorch: the automatic mode uses it too, and a process that imported
trainscope.pytorch is one whose script makes its own hook (the automatic mode then stands down).

Cost: nothing on steps that save nothing (the closure is not wrapped); on saving steps one
Python call per closure call and, for each loss output saved during one, a list append.
"""


def closure_of(args, kwargs):
    """The closure an optimizer step was given, and where ("kwargs", or "args": args[1], after
    the optimizer itself, as PyTorch passes them to step hooks), or (None, None)."""
    closure = kwargs.get("closure")
    if callable(closure):
        return closure, "kwargs"
    if len(args) > 1 and callable(args[1]):
        return args[1], "args"
    return None, None


def with_closure(args, kwargs, where, closure):
    """(args, kwargs) of an optimizer step with its closure (found at `where`) replaced."""
    if where == "kwargs":
        return args, {**kwargs, "closure": closure}
    return (args[0], closure, *args[2:]), kwargs


class ClosureRecorder:
    """The closure evaluations of the hook's current step. Thread-safety: the training thread,
    as the hook."""

    __slots__ = ("evaluation", "steps", "_generation")

    def __init__(self):
        # The names saved by the evaluation running now (a list), or None outside one.
        self.evaluation = None
        # This step's optimizer steps given a closure: [optimizer class name, [evaluations]].
        self.steps = []
        self._generation = 0  # steps taken so far (a wrapper from an earlier step starts anew)

    def wrap(self, hook, optimizer, closure):
        """`closure`, wrapped so that each call of it while `hook` saves is one evaluation of
        this optimizer step. A call nested in another evaluation (a closure that calls another
        optimizer's step) belongs to the outer one."""
        recorder = self
        state = [-1, None]  # (generation, [optimizer class name, evaluations]) of this wrapper

        def evaluate(*args, **kwargs):
            if recorder.evaluation is not None or not hook._saving:
                return closure(*args, **kwargs)
            if state[0] != recorder._generation:
                state[0] = recorder._generation
                state[1] = [type(optimizer).__name__, []]
                recorder.steps.append(state[1])
            names = []
            state[1][1].append(names)
            recorder.evaluation = names
            try:
                return closure(*args, **kwargs)
            finally:
                if recorder.evaluation is names:
                    recorder.evaluation = None

        evaluate.__wrapped__ = closure
        return evaluate

    def take(self):
        """Ends the step: its record, [(optimizer class name, [[names], ...])] for the optimizer
        steps whose closure ran twice or more (possibly empty). An evaluation still running (a
        step boundary inside the closure: a hook without hook.step() starts a step at each
        forward pass of its model) records nothing more; the next call starts the next step's
        record."""
        self._generation += 1
        self.evaluation = None
        steps, self.steps = self.steps, []
        return [(name, evals) for name, evals in steps if len(evals) >= 2 and any(evals)]
