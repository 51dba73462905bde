"""Vector stores as the corpus and the retriever: the chunks a team tests are in its store.

``--corpus chroma:///db?collection=docs`` reads the chunks from the store with the
store's own ids, and ``--retriever store`` asks the store's own similarity search,
so coverage is measured against what production retrieves, not against a copy.
"""

from ragcov.stores.base import StoreChunk, VectorStore
from ragcov.stores.urls import StoreURL, is_store_url, open_store, parse_store_url

__all__ = ["StoreChunk", "StoreURL", "VectorStore", "is_store_url", "open_store",
           "parse_store_url"]
