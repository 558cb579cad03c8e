"""smdebug.core.collection_manager."""

from trainscope.collection import COLLECTIONS_FILE_KEYS as ALLOWED_PARAMS  # noqa: F401
from trainscope.collection import CollectionManager  # noqa: F401
