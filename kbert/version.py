"""The kbert version, in a module that imports nothing, so any part of kbert may read it."""

__version__ = "0.1.0"
