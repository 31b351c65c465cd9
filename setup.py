"""The wheel of the service carries its SQL migrations: the build copies ``migrations/*.sql``
into ``haki/db/migrations_sql``, where the migration runner looks first (the Lambda layer's
build does the same). All other metadata is in pyproject.toml."""

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
        target.mkdir(parents=True, exist_ok=True)
        for sql in sorted(MIGRATIONS.glob("*.sql")):
            shutil.copyfile(sql, target / sql.name)


setup(cmdclass={"build_py": BuildWithMigrations})
