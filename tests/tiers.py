"""Each test's tier, by what it costs to run: a marker set by the test's folder (or file), for
``make test-unit``, ``make test-fast`` and the like. Loaded for every test of the repository
(``tests/``, ``benchmarks/tests/``, ``scripts/tests/``) by the root ``conftest.py``."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The tiers, cheapest first (their meanings: the markers of pyproject.toml). Each test carries
#: the one of the costliest real part it needs; ``slow`` comes on top of a tier.
TIERS = ("unit", "db", "model", "http", "browser", "infra")
#: The tier of the tests of a folder...
TIER_OF_FOLDER = {
    "tests/unit": "unit",
    "tests/integration": "db",
    "tests/handlers": "model",
    "tests/embedder": "model",
    "tests/e2e": "http",
    "tests/clients": "http",
    "tests/infra": "infra",
    "benchmarks/tests": "unit",
    "scripts/tests": "unit",
}
#: ...but for the files whose cost differs from their folder's.
TIER_OF_FILE = {
    "tests/integration/test_assembler_language.py": "model",
    "tests/integration/test_eval_set_export.py": "model",
    "tests/integration/test_evaluation.py": "model",
    "tests/integration/test_faults.py": "model",
    "tests/integration/test_memory_writer.py": "model",
    "tests/integration/test_stored_time_repair.py": "model",
    "tests/integration/test_write_conflicts.py": "model",
    "tests/integration/test_write_batch_races.py": "model",
    "tests/integration/test_write_events.py": "model",
    "tests/integration/test_threads.py": "model",
    "tests/integration/test_storage_quota.py": "model",
    "tests/integration/test_write_facts.py": "model",
    "tests/integration/test_write_forget.py": "model",
    "tests/integration/test_write_lifecycle.py": "model",
    "tests/integration/test_write_schema.py": "model",
    "tests/clients/test_console.py": "browser",
    "tests/clients/test_python_models.py": "unit",
    "tests/infra/test_migrate_handler.py": "unit",
    "benchmarks/tests/test_bench_server_restart.py": "db",
    "benchmarks/tests/test_bench_ingest_smoke.py": "http",
    "benchmarks/tests/test_load_smoke.py": "http",
}
#: Fixtures that start a real part: a test that asks for one is at least of that tier.
_FIXTURE_TIERS = {"pg_superuser_url": "db", "embedder": "model", "e5": "model"}


def tier_of(path: Path) -> str:
    """The tier of the tests of ``path`` (a test file)."""
    relative = path.resolve().relative_to(ROOT).as_posix()
    if relative in TIER_OF_FILE:
        return TIER_OF_FILE[relative]
    folder = next((f for f in TIER_OF_FOLDER if relative.startswith(f + "/")), None)
    if folder is None:
        raise pytest.UsageError(f"{relative}: no tier; add its folder to TIER_OF_FOLDER "
                                "in tests/tiers.py")
    return TIER_OF_FOLDER[folder]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with its tier; refuse a tier cheaper than a fixture the test uses."""
    wrong = set()
    for item in items:
        tier = tier_of(item.path)
        for fixture in set(_FIXTURE_TIERS) & set(getattr(item, "fixturenames", ())):
            if TIERS.index(_FIXTURE_TIERS[fixture]) > TIERS.index(tier):
                wrong.add(f"{item.path.relative_to(ROOT)}: tier {tier!r}, but a test uses the "
                          f"fixture {fixture!r} ({_FIXTURE_TIERS[fixture]!r})")
        item.add_marker(tier)
    if wrong:
        raise pytest.UsageError("\n".join(sorted(wrong)) + "\ngive these files their tier in "
                                "TIER_OF_FILE (tests/tiers.py)")
