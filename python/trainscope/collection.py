"""Collection: a named group of tensors with its own save and reduction configs (smdebug's API).

A trial's collections come from its collections files (``collections/000000000/
<worker>_collections.json``); ``Collection.from_dict`` reads one entry of that file.
"""

import json
import re

from .exceptions import SMDebugTypeError
from .reduction_config import ReductionConfig
from .save_config import SaveConfig


class CollectionKeys:
    """Names of the built-in collections."""

    DEFAULT = "default"
    ALL = "all"
    INPUTS = "inputs"
    OUTPUTS = "outputs"
    WEIGHTS = "weights"
    BIASES = "biases"
    GRADIENTS = "gradients"
    LOSSES = "losses"
    SCALARS = "scalars"
    METRICS = "metrics"
    SM_METRICS = "sm_metrics"


class Collection:
    def __init__(
        self,
        name,
        include_regex=None,
        tensor_names=None,
        reduction_config=None,
        save_config=None,
        save_histogram=True,
    ):
        self.name = name
        self.include_regex = list(include_regex) if include_regex is not None else []
        self.tensor_names = tensor_names
        self.reduction_config = reduction_config
        self.save_config = save_config
        self.save_histogram = save_histogram

    @property
    def tensor_names(self):
        return self._tensor_names

    @tensor_names.setter
    def tensor_names(self, names):
        if names is None:
            names = set()
        elif isinstance(names, (list, tuple, set, frozenset)):
            names = set(names)
        else:
            raise SMDebugTypeError("tensor_names can only be a list or a set")
        self._tensor_names = names

    def include(self, regex):
        """Adds one regex (or a list of them) to include_regex."""
        self.include_regex.extend(regex if isinstance(regex, list) else [regex])

    def has_tensor_name(self, tname):
        return tname in self._tensor_names

    def add_tensor_name(self, tname):
        self._tensor_names.add(tname)

    def remove_tensor_name(self, tname):
        self._tensor_names.discard(tname)

    def matches(self, tname):
        """True if ``tname`` is listed or matches an include_regex (``re.search`` semantics)."""
        return tname in self._tensor_names or any(re.search(r, tname) for r in self.include_regex)

    def to_json_dict(self):
        return {
            "name": self.name,
            "include_regex": list(self.include_regex),
            "tensor_names": sorted(self._tensor_names),
            "reduction_config": self.reduction_config.to_json_dict() if self.reduction_config else None,
            "save_config": self.save_config.to_json_dict() if self.save_config else None,
            "save_histogram": self.save_histogram,
        }

    def to_json(self):
        return json.dumps(self.to_json_dict())

    @classmethod
    def from_dict(cls, params):
        if not isinstance(params, dict):
            raise SMDebugTypeError(f"params={params!r} must be a dict")
        return cls(
            name=params["name"],
            include_regex=params.get("include_regex") or [],
            tensor_names=params.get("tensor_names") or [],
            reduction_config=ReductionConfig.from_dict(params.get("reduction_config")),
            save_config=SaveConfig.from_dict(params.get("save_config")),
            save_histogram=params.get("save_histogram", True),
        )

    @classmethod
    def from_json(cls, json_str):
        return cls.from_dict(json.loads(json_str))

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        if not isinstance(other, Collection):
            return NotImplemented
        return self.to_json_dict() == other.to_json_dict()

    def __repr__(self):
        return f"<class Collection: name={self.name}>"

    def __str__(self):
        return str(self.to_json_dict())


def collections_file_json(collections, num_workers=1):
    """The text of a collections file (``collections/000000000/<worker>_collections.json``) in
    smdebug's schema: ``{"collections": {name: {...}}, "_meta": {"num_workers": N}}``.
    `collections` is an iterable of Collection or a {name: Collection} dict."""
    if isinstance(collections, dict):
        collections = collections.values()
    body = {c.name: c.to_json_dict() for c in collections}
    return json.dumps({"collections": body, "_meta": {"num_workers": int(num_workers)}})
