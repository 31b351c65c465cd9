"""``haki migrate`` and ``haki scope-indexes``: the schema and its per-subject indexes."""

import argparse
import time
from pathlib import Path

from haki.db import Role
from haki.db.migrate import apply_migrations
from haki.db.scope_indexes import ScopeIndexPolicy, reconcile_scope_indexes
from haki.settings import get_settings
from haki_local.embedded import local_database_url


def register(subparsers: argparse._SubParsersAction) -> None:
    migrate = subparsers.add_parser(
        "migrate",
        help="apply pending migrations (as the owner: HAKI_DATABASE_URL, else the embedded db)",
    )
    migrate.add_argument("--dir", type=Path, default=None, help="migrations folder")
    migrate.set_defaults(run=_migrate)
    indexes = subparsers.add_parser(
        "scope-indexes",
        help="build the big subjects' own indexes (HNSW, GIN) and drop the ones no longer wanted "
             "(as the owner; HAKI_SCOPE_INDEX_MIN_ROWS, _MAX_SHARE, HAKI_SCOPE_INDEXES_MAX)",
    )
    indexes.add_argument("--dry-run", action="store_true",
                         help="say what would be built and dropped, change nothing")
    indexes.set_defaults(run=_scope_indexes)


def _migrate(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    url = local_database_url(get_settings(), Role.OWNER)
    applied = apply_migrations(url, args.dir)
    took = time.perf_counter() - started
    if applied:
        print(f"applied {len(applied)} migration(s) in {took:.2f}s: {', '.join(applied)}")
    else:
        print(f"schema up to date ({took:.2f}s)")
    return 0


def _scope_indexes(args: argparse.Namespace) -> int:
    settings = get_settings()
    started = time.perf_counter()
    run = reconcile_scope_indexes(
        local_database_url(settings, Role.OWNER), ScopeIndexPolicy.from_settings(settings),
        dry_run=args.dry_run, progress=lambda step: print(step, flush=True))
    took = time.perf_counter() - started
    if not run.ran:
        print("another run is under way; nothing done")
        return 1
    build, drop = ("would build", "would drop") if args.dry_run else ("built", "dropped")
    print(f"scope indexes: {build} {len(run.created)}, {drop} {len(run.dropped)}, "
          f"kept {len(run.kept)}, failed {len(run.failed)} ({took:.2f}s)")
    return 1 if run.failed else 0
