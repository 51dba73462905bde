"""ragcov's version, in a leaf every layer may import.

Read by the data file's meta, the JSON reports and ``--version``; importing it from the
package's face (``ragcov/__init__``) would make each of those depend on the public door.
"""

__version__ = "0.1.0"
