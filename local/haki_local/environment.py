"""What a local run configures that a deployment configures for itself.

The core reads its configuration from ``HAKI_*`` variables only (:mod:`haki.settings`), as a
Lambda function does: the CDK stack sets them for each function. A local run fills in, where
the user left them unset, the ones a source checkout or the working directory implies — the
data folder, the models, the migrations — at its entry points (the ``haki`` command, the test
and benchmark harnesses), before anything reads them; the handlers it runs, in process or in
worker processes, then read the same configuration. The embedded database's URL comes from
:func:`haki_local.embedded.local_database_url`, per role.
"""

import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path

#: The root of a source checkout (``local/haki_local`` → two levels up). Installed from a wheel
#: the package sits elsewhere and this path holds no checkout: :func:`in_checkout` says which.
SOURCE_ROOT = Path(__file__).resolve().parents[2]
#: The folder of local state: the checkout's, or the working directory's once installed.
STATE_FOLDER = ".haki"


def in_checkout() -> bool:
    """Whether this package runs from a source checkout (``pip install -e``), not a wheel."""
    return (SOURCE_ROOT / "pyproject.toml").is_file() and (SOURCE_ROOT / "migrations").is_dir()


def local_defaults(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables ``environ`` leaves unset that a local run sets: ``HAKI_DATA_DIR`` (the
    checkout's ``.haki/``, git-ignored; installed, ``.haki/`` of the working directory, as git
    keeps ``.git/``), ``HAKI_MODEL_DIR`` (the checkout's ``build/models``, where ``make model``
    builds them; installed, ``models/`` of the data folder) and, in a checkout, its
    ``migrations/`` as ``HAKI_MIGRATIONS_DIR`` (installed, the wheel's packaged copy is the
    core's default)."""
    checkout = in_checkout()
    data = Path(environ.get("HAKI_DATA_DIR")
                or (SOURCE_ROOT if checkout else Path.cwd()) / STATE_FOLDER)
    defaults = {
        "HAKI_DATA_DIR": str(data),
        "HAKI_MODEL_DIR": str(SOURCE_ROOT / "build" / "models" if checkout else data / "models"),
    }
    if checkout:
        defaults["HAKI_MIGRATIONS_DIR"] = str(SOURCE_ROOT / "migrations")
    return {name: value for name, value in defaults.items() if not environ.get(name)}


def use_local_defaults(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set :func:`local_defaults` in ``environ`` (this process's, inherited by the processes
    it starts)."""
    environ.update(local_defaults(environ))
