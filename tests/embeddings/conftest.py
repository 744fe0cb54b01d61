"""Fixtures of the embedding tests: a stand-in strings-in export (see `embed_cases`) and a fresh ram:// root."""

from __future__ import annotations

import uuid

import pytest

from tests.embeddings.embed_cases import save_standin_export


@pytest.fixture(scope="session")
def standin_export(tmp_path_factory) -> str:
    """A local stand-in export directory."""
    return save_standin_export(str(tmp_path_factory.mktemp("standin") / "export"))


@pytest.fixture
def ram_root() -> str:
    return f"ram://kbert-embed-{uuid.uuid4().hex[:8]}"
