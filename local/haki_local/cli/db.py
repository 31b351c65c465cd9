"""``haki migrate`` and ``haki db``: the schema and the local database."""

import argparse
import time
from pathlib import Path

from haki.db import Role, database_url
from haki.db.migrate import apply_migrations
from haki.settings import get_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    migrate = subparsers.add_parser(
        "migrate",
        help="apply pending migrations (as the owner: HAKI_DATABASE_URL, else the embedded db)",
    )
    migrate.add_argument("--dir", type=Path, default=None, help="migrations folder")
    migrate.set_defaults(run=_migrate)


def _migrate(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    url = database_url(get_settings(), Role.OWNER)
    applied = apply_migrations(url, args.dir)
    took = time.perf_counter() - started
    if applied:
        print(f"applied {len(applied)} migration(s) in {took:.2f}s: {', '.join(applied)}")
    else:
        print(f"schema up to date ({took:.2f}s)")
    return 0
