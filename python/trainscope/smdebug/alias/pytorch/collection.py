"""smdebug.pytorch.collection: the hook's Collection and the collection manager."""

from trainscope.collection import CollectionManager
from trainscope.pytorch.collection import Collection, CollectionKeys

__all__ = ["Collection", "CollectionKeys", "CollectionManager"]
