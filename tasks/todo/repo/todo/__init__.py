"""A small todo web service built on the Python standard library."""

__version__ = "0.1.0"
