"""smdebug.rules.req_tensors."""

from trainscope.rules.req_tensors import RequiredTensors, RequiredTensorsForTrial  # noqa: F401
