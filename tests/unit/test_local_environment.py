"""The local run's defaults (``haki_local.environment``): the folders of a checkout or of the
working directory, given to the core only where the environment leaves them unset."""

from pathlib import Path

import pytest

import haki_local.environment as environment
from haki.db.migrate import load_migrations
from haki.errors import MigrationError
from haki.settings import Settings
from haki_local.environment import local_defaults

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkout_gives_its_own_folders() -> None:
    assert local_defaults({}) == {
        "HAKI_DATA_DIR": str(ROOT / ".haki"),
        "HAKI_MODEL_DIR": str(ROOT / "build" / "models"),
        "HAKI_MIGRATIONS_DIR": str(ROOT / "migrations"),
    }
    settings = Settings.from_env(local_defaults({}))
    assert (settings.migrations_dir or Path()).joinpath("0001_schema.sql").is_file()


def test_what_the_environment_sets_is_kept(tmp_path: Path) -> None:
    given = {"HAKI_DATA_DIR": str(tmp_path), "HAKI_MODEL_DIR": "/models",
             "HAKI_MIGRATIONS_DIR": "/sql"}
    assert local_defaults(given) == {}


def test_installed_the_state_follows_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(environment, "SOURCE_ROOT", tmp_path / "site-packages")
    monkeypatch.chdir(tmp_path)
    # No checkout: no migrations folder (the wheel's packaged copy is the core's default).
    assert local_defaults({}) == {"HAKI_DATA_DIR": str(tmp_path / ".haki"),
                                  "HAKI_MODEL_DIR": str(tmp_path / ".haki" / "models")}
    data = tmp_path / "state"
    assert local_defaults({"HAKI_DATA_DIR": str(data)}) == {
        "HAKI_MODEL_DIR": str(data / "models")}


def test_the_core_knows_no_checkout() -> None:
    settings = Settings.from_env({})
    assert settings.model_dir == Path("/opt/haki/models")
    assert settings.migrations_dir is None


def test_a_missing_migrations_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(MigrationError, match="no migrations folder"):
        load_migrations(tmp_path / "nowhere")
