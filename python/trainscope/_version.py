"""The package version (read by the build from this file: keep it one plain assignment)."""

__version__ = "0.1.0"
