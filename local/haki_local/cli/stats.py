"""``haki stats aggregate``: run the stats rollup once (what the schedule does when deployed)."""

import argparse
from datetime import UTC, datetime

from haki import stats
from haki.db import Database, Role
from haki.settings import get_settings
from haki_local.embedded import local_database_url


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("stats", help="usage statistics")
    actions = parser.add_subparsers(dest="stats_command", required=True)
    aggregate = actions.add_parser("aggregate", help="roll context calls up to the watermark")
    aggregate.add_argument(
        "--rerun-from", type=_utc, default=None, metavar="ISO_TIME",
        help="also recompute the hours from this time (UTC unless an offset is given)",
    )
    aggregate.set_defaults(run=_aggregate)


def _utc(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _aggregate(args: argparse.Namespace) -> int:
    db = Database(local_database_url(get_settings(), Role.STATS))
    result = stats.aggregate(db, rerun_from=args.rerun_from)
    print(
        f"rolled {result.calls} call(s) into {result.rollup_rows} hourly row(s) "
        f"from {result.rolled_from:%Y-%m-%d %H:%M} to {result.rolled_until:%Y-%m-%d %H:%M} UTC"
    )
    return 0
