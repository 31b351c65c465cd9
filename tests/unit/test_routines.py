"""``haki.assembler.routines``: the migration creating the fused ranking's functions is the
rendering of the statements ``sql.py`` holds, and a call passes every argument."""

from pathlib import Path

import numpy as np

from haki.assembler import DEFAULT_CONFIG
from haki.assembler.retrieval import query_parameters
from haki.assembler.routines import ROUTINES, render_migration
from haki.db.migrate import default_migrations_dir
from haki.models import ContextRequest


def _newest_defining(name: str, migrations: Path) -> str:
    defining = [path for path in sorted(migrations.glob("*.sql"))
                if f"CREATE FUNCTION {name}(" in path.read_text(encoding="utf-8")]
    assert defining, f"no migration creates {name}"
    return defining[-1].read_text(encoding="utf-8")


def test_the_newest_migration_of_each_function_is_its_rendering() -> None:
    """A statement changed in sql.py without a new rendered migration fails here."""
    for routine in ROUTINES:
        assert routine.definition() in _newest_defining(
            routine.name, default_migrations_dir()), (
            f"{routine.name} differs from its migration: render a new one with "
            "`python -m haki.assembler.routines`")
    assert all(routine.definition() in render_migration() for routine in ROUTINES)


def test_a_call_passes_every_argument_of_the_function() -> None:
    params = query_parameters(
        ContextRequest(project_id="p", subject_id="s", query="q"),
        np.zeros(384, dtype=np.float32), DEFAULT_CONFIG)
    for routine in ROUTINES:
        assert routine.parameters and set(routine.parameters) <= set(params)
        assert routine.call == (f"SELECT * FROM {routine.name}("
                                + ", ".join(f"%({p})s" for p in routine.parameters) + ")")
        # The body reads the arguments only: no placeholder is left in it.
        assert "%(" not in routine.definition()
