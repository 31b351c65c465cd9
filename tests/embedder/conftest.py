"""Fixtures for the embedder tests. They use the real models built by ``make model``
(``make test`` builds them first); a missing model is a failure, never a skip."""

import json
from pathlib import Path

import pytest

from haki.embedding import Embedder, get_embedder
from haki.settings import Settings
from haki_local.environment import SOURCE_ROOT

MODELS_DIR = SOURCE_ROOT / "build" / "models"
DATA_DIR = SOURCE_ROOT / "tests" / "data"
DEFAULT_PROVIDER = "e5-small-multilingual"
PROVIDERS = ("e5-small-multilingual", "minilm-l6")


def _settings(provider: str, model_dir: Path) -> Settings:
    return Settings(embed_provider=provider, model_dir=model_dir)


@pytest.fixture(scope="session")
def models_dir() -> Path:
    missing = [p for p in PROVIDERS if not (MODELS_DIR / p / "manifest.json").is_file()]
    if missing:
        pytest.fail(f"models not built: {missing}; run `make model` first", pytrace=False)
    return MODELS_DIR


@pytest.fixture(scope="session", params=PROVIDERS)
def embedder(request: pytest.FixtureRequest, models_dir: Path) -> Embedder:
    """Each provider in turn."""
    return get_embedder(_settings(request.param, models_dir))


@pytest.fixture(scope="session")
def e5(models_dir: Path) -> Embedder:
    return get_embedder(_settings(DEFAULT_PROVIDER, models_dir))


@pytest.fixture(scope="session")
def translation_pairs() -> list[tuple[str, str]]:
    doc = json.loads((DATA_DIR / "translation_pairs.json").read_text(encoding="utf-8"))
    return [(p["en"], p["fr"]) for p in doc["pairs"]]
