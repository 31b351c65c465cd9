"""The benchmark server's huge-page arithmetic (benchmarks/server.py), on texts of the kernel's
own format; the reservation itself needs root and is exercised by `make bench`."""

import os
from pathlib import Path

from benchmarks.server import huge_pages_to_add, meminfo_huge_pages, server_huge_pages_kb

MEMINFO = """MemTotal:       24577828 kB
AnonHugePages:         0 kB
HugePages_Total:    2300
HugePages_Free:     1264
HugePages_Rsvd:     1016
HugePages_Surp:        0
Hugepagesize:       2048 kB
"""


def test_meminfo_gives_free_and_reserved_pages() -> None:
    assert meminfo_huge_pages(MEMINFO) == (1264, 1016)
    assert meminfo_huge_pages("MemTotal: 1 kB\n") == (0, 0)


def test_pages_to_add_count_only_pages_nobody_was_promised() -> None:
    # 1264 free of which 1016 promised to a running server: 248 really available.
    assert huge_pages_to_add(2052, 1264, 1016) == 2052 - 248
    assert huge_pages_to_add(2052, 3000, 0) == 0
    assert huge_pages_to_add(0, 0, 0) == 0


def test_server_pages_read_from_the_postmaster_status(tmp_path: Path) -> None:
    # No postmaster.pid: unknown, reported as none.
    assert server_huge_pages_kb(tmp_path) == 0
    # This very process stands in for a postmaster: it maps no huge pages.
    (tmp_path / "postmaster.pid").write_text(f"{os.getpid()}\n/data\n")
    assert server_huge_pages_kb(tmp_path) == 0
    (tmp_path / "postmaster.pid").write_text("not-a-pid\n")
    assert server_huge_pages_kb(tmp_path) == 0
