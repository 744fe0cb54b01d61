"""Tests of the studies: outside the default test run (`python -m pytest benchmarks/studies/tests` runs them).

They share the package tests' fixtures (a tiny vocabulary, MiniLM, ../shared/data).
"""

from conftest import minilm, shared_data, tiny_vocab_file  # noqa: F401  (tests/ is on pytest's path)
