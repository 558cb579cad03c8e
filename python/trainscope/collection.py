"""Collection: a named group of tensors with its own save and reduction configs (smdebug's API).

A trial's collections come from its collections files (``collections/000000000/
<worker>_collections.json``); ``Collection.from_dict`` reads one entry of that file, and
``CollectionManager`` reads or writes a whole file.
"""

import json
import os

from ._native import load as _load_core
from .exceptions import SMDebugNotImplementedError, SMDebugTypeError, SMDebugValueError
from .reduction_config import ReductionConfig
from .save_config import SaveConfig

# The top-level keys of a collections file.
COLLECTIONS_FILE_KEYS = ("collections", "_meta")
# Where a trial keeps its collections files (smdebug's layout; docs/formats/trial.md).
COLLECTIONS_DIR = os.path.join("collections", "000000000")


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
    """A collection as a value: what collections files hold and smdebug's scripts build
    (``Collection("relus", include_regex=["relu"])``), compared, copied and pickled by value.
    trainscope.pytorch.Collection is this class bound to the hook's C++ collection."""

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
        """True if ``tname`` is listed or an include_regex matches somewhere in it. The regexes
        are matched by the C++ core (Collection::Matches: ECMAScript, re.search semantics), as
        the hook matches them, compiled once per list of regexes. SMDebugValueError, with the
        core's message, for a regex the core cannot compile."""
        if tname in self.tensor_names:
            return True
        key = tuple(self.include_regex)
        if self.__dict__.get("_matcher_key") != key:
            matcher = _load_core().Collection(str(self.name))
            try:
                matcher.include_regex = [str(r) for r in key]
            except ValueError as e:
                raise SMDebugValueError(getattr(e, "message", None) or str(e)) from None
            self._matcher, self._matcher_key = matcher, key
        return self._matcher.matches(tname)

    def __getstate__(self):
        """The values only (pickle, copy): the compiled regexes are rebuilt on first use."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_matcher", "_matcher_key")}

    def to_json_dict(self):
        return {
            "name": self.name,
            "include_regex": list(self.include_regex),
            "tensor_names": sorted(self._tensor_names),
            "reduction_config": (
                self.reduction_config.to_json_dict() if self.reduction_config else None),
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


class CollectionManager:
    """A set of collections by name, with the collections file's ``_meta`` (smdebug's
    CollectionManager: what tests and tools use to write or read a collections file).

    ``export(trial_dir, filename)`` writes ``<trial_dir>/collections/000000000/<filename>``
    atomically; ``load(path)`` / ``load_from_string(text)`` read one. Not thread-safe.
    """

    ALLOWED_PARAMS = COLLECTIONS_FILE_KEYS

    def __init__(self, collections=None, create_default=False):
        self.collections = {} if collections is None else collections
        self._meta = {"num_workers": 1}
        if create_default:
            self.create_collection(CollectionKeys.DEFAULT)

    def create_collection(self, name, cls=Collection):
        if name not in self.collections:
            self.collections[name] = cls(name)

    def get_collections(self):
        return self.collections

    def add(self, arg):
        """Adds a Collection (replacing one of the same name) or a new empty one by name."""
        if isinstance(arg, str):
            self.create_collection(arg)
        elif hasattr(arg, "name") and hasattr(arg, "to_json_dict"):
            self.collections[arg.name] = arg
        else:
            raise SMDebugTypeError(f"add() takes a collection name or a Collection, not {arg!r}")

    def get(self, name, create=True):
        """The named collection, created empty if missing (KeyError-like error if create=False)."""
        if name not in self.collections:
            if not create:
                raise SMDebugValueError(f"Collection {name} has not been created")
            self.create_collection(name)
        return self.collections[name]

    def update_meta(self, meta):
        if not isinstance(meta, dict):
            raise SMDebugTypeError(f"meta should be a dict, got {type(meta)}")
        self._meta.update(meta)

    def get_num_workers(self):
        return int(self._meta["num_workers"])

    def set_num_workers(self, num_workers):
        self._meta["num_workers"] = int(num_workers)

    def to_json_dict(self):
        return {
            "collections": {n: c.to_json_dict() for n, c in self.collections.items()},
            "_meta": dict(self._meta),
        }

    def export(self, out_dir, filename):
        """Writes the collections file `filename` of the trial at `out_dir` (complete or not at
        all: written to a temporary name, then renamed)."""
        if str(out_dir).startswith("s3://"):
            raise SMDebugNotImplementedError(f"{out_dir}: s3:// trials are not supported yet")
        folder = os.path.join(out_dir, COLLECTIONS_DIR)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, filename)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(json.dumps(self.to_json_dict()))
        os.replace(tmp, path)

    @classmethod
    def load(cls, filename, collection_class=Collection):
        with open(filename) as f:
            return cls.load_from_string(f.read(), collection_class)

    @classmethod
    def load_from_string(cls, s, collection_class=Collection):
        params = json.loads(s)
        if params is None:
            return None
        unknown = [k for k in params if k not in cls.ALLOWED_PARAMS]
        if unknown:
            raise SMDebugValueError(
                f"a collections file has only the keys {', '.join(cls.ALLOWED_PARAMS)}; "
                f"found {', '.join(unknown)}")
        cm = cls()
        for c_dict in params.get("collections", {}).values():
            cm.add(collection_class.from_dict(c_dict))
        cm.update_meta(params.get("_meta", {}))
        return cm

    def __eq__(self, other):
        if not isinstance(other, CollectionManager):
            return NotImplemented
        return self.collections == other.collections

    def __repr__(self):
        return f"<class CollectionManager: collection_names={list(self.collections.keys())}>"
