"""smdebug.core.collection: the framework-agnostic Collection of trainscope's trials."""

from trainscope.collection import Collection, CollectionKeys  # noqa: F401
