"""RequiredTensors: what a rule needs at a step (smdebug's rules/req_tensors.py contract)."""

from ..exceptions import TensorUnavailable


class RequiredTensors:
    """The tensors and steps a rule asks for, per trial. ``add`` raises TensorUnavailable for a
    name that was never saved (unless ``should_match_regex``); ``fetch`` waits for the steps and
    reads every value, so missing data raises before ``invoke_at_step`` runs."""

    def __init__(self, base_trial, other_trials):
        self.base_trial = base_trial
        self._per_trial = {base_trial: RequiredTensorsForTrial(base_trial)}
        for trial in other_trials or []:
            self._per_trial[trial] = RequiredTensorsForTrial(trial)

    def _for(self, trial):
        return self._per_trial[self.base_trial if trial is None else trial]

    def add(self, name, steps, trial=None, should_match_regex=False):
        self._for(trial).add(name, steps, should_match_regex=should_match_regex)

    def get_tensor_steps(self, name, trial=None):
        return self._for(trial).get_tensor_steps(name)

    def get_names(self, trial=None):
        return self._for(trial).get_names()

    def get(self, trial=None):
        return self._for(trial).get()

    def clear(self):
        for r in self._per_trial.values():
            r.clear()

    def fetch(self):
        for r in self._per_trial.values():
            r.fetch()


class RequiredTensorsForTrial:
    def __init__(self, trial):
        self.trial = trial
        self._tensor_steps = {}
        self._tensors = {}

    def _add_steps(self, name, steps):
        self._tensor_steps.setdefault(name, []).extend(list(steps))
        if name not in self._tensors:
            self._tensors[name] = self.trial.tensor(name)

    def add(self, name, steps, should_match_regex=False):
        if should_match_regex:
            for matched in self.trial.tensor_names(regex=[name]):
                self._add_steps(matched, steps)
        else:
            if not self.trial.has_tensor(name):
                raise TensorUnavailable(name)
            self._add_steps(name, steps)

    def get_tensor_steps(self, name):
        return self._tensor_steps[name]

    def get_names(self):
        return self._tensor_steps.keys()

    def get(self):
        return self._tensors.values()

    def clear(self):
        self._tensor_steps.clear()
        self._tensors.clear()

    def fetch(self):
        steps = sorted({s for v in self._tensor_steps.values() for s in v})
        if steps:
            self.trial.wait_for_steps(steps)
        for name, tsteps in self._tensor_steps.items():
            tensor = self._tensors[name]
            for s in tsteps:
                tensor.value(s)  # raises TensorUnavailableForStep when it was not saved
