"""dyngraph's version, in a module of its own: the capture layer stamps it into every
trace header and may not import the package root (which loads the engine and backends)."""

__version__ = "0.1.0"
