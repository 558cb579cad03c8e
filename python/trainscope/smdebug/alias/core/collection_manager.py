"""smdebug.core.collection_manager."""

from trainscope.collection import CollectionManager  # noqa: F401

ALLOWED_PARAMS = list(CollectionManager.ALLOWED_PARAMS)
