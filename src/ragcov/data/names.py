"""The data file's default name and format version: a leaf the whole data layer reads.

Kept apart from ``ragcov/data/__init__`` (the package's face, which names its modules
for readers) so that no module of the layer imports the face that imports it.
"""

# Version of the data-file schema.
#   1: meta, chunks, queries, hits (rank, score).
#   2: the corpus hash covers document ids too. A format-1 file is still read and
#      appended to: its hash is recomputed from the chunks it holds (see read_meta).
#   3: hits (and probe_hits) are WITHOUT ROWID tables: each hit is stored once, in
#      the (query, rank) key's own b-tree, not in a table plus a copy in its key's
#      index; the same rows and columns. Formats 1 and 2 are still read, combined and
#      appended to as they are (their tables keep their layout).
FORMAT_VERSION = 3
# The data file every command and the pytest plugin use unless told otherwise.
DEFAULT_DATA_FILE = ".ragcov"
