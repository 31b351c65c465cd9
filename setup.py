"""The wheel of the service carries its SQL migrations: the build copies ``migrations/`` (the
numbered files and ``functions/``) into ``haki/db/migrations_sql``, where the migration runner
looks first (the Lambda layer's build does the same). All other metadata is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


class BuildWithMigrations(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the checkout's migrations/
            return
        target = Path(self.build_lib) / "haki" / "db" / "migrations_sql"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(MIGRATIONS, target, ignore=shutil.ignore_patterns("*.md"))


setup(cmdclass={"build_py": BuildWithMigrations})
