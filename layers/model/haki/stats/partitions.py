"""Day partitions of ``context_calls`` / ``context_traces``: made ahead, dropped past retention.

The scheduled aggregation runs :func:`maintain_partitions` after each rollup (role
``haki_stats``). The work is the owner's ``haki_trace_partitions()``
(migrations/functions/haki_trace_partitions.sql): it makes the partitions of today and the
next :data:`PARTITIONS_AHEAD` days, then DETACHes and DROPs whole partitions whose day ended
more than ``retention_days`` ago — and, for calls, only once the rollup has folded them (the
overview's older hours then come from the rollups alone). A transaction-level advisory lock
serialises two runs at once; every run is idempotent.
"""

from dataclasses import dataclass

from haki.db import Database

#: Days of partitions kept ready ahead of today (UTC): a week of missed schedules still
#: writes into a day partition, and past that into DEFAULT, never an error.
PARTITIONS_AHEAD = 7


@dataclass(frozen=True)
class PartitionMaintenance:
    partitions_created: int
    partitions_dropped: int
    #: Rows in the DEFAULT partitions (0 in steady state: a row there means a day had no
    #: partition when it was written; the next run moves it into its day partition).
    default_rows: int


def maintain_partitions(db: Database, *, retention_days: int,
                        ahead: int = PARTITIONS_AHEAD) -> PartitionMaintenance:
    """Create partitions ahead and drop expired ones, in one transaction."""
    with db.transaction() as conn:
        row = conn.execute("SELECT * FROM haki_trace_partitions(%s, %s)",
                           (ahead, retention_days)).fetchone()
    assert row is not None
    return PartitionMaintenance(*map(int, row))
