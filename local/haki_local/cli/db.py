"""``haki migrate`` and ``haki scope-graphs``: the schema and its per-subject indexes."""

import argparse
import time
from pathlib import Path

from haki.db import Role, database_url
from haki.db.migrate import apply_migrations
from haki.db.scope_graphs import ScopeGraphPolicy, reconcile_scope_graphs
from haki.settings import get_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    migrate = subparsers.add_parser(
        "migrate",
        help="apply pending migrations (as the owner: HAKI_DATABASE_URL, else the embedded db)",
    )
    migrate.add_argument("--dir", type=Path, default=None, help="migrations folder")
    migrate.set_defaults(run=_migrate)
    graphs = subparsers.add_parser(
        "scope-graphs",
        help="build the big subjects' own HNSW graphs and drop the ones no longer wanted "
             "(as the owner; HAKI_SCOPE_GRAPH_MIN_ROWS, _MAX_SHARE, HAKI_SCOPE_GRAPHS_MAX)",
    )
    graphs.add_argument("--dry-run", action="store_true",
                        help="say what would be built and dropped, change nothing")
    graphs.set_defaults(run=_scope_graphs)


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


def _scope_graphs(args: argparse.Namespace) -> int:
    settings = get_settings()
    started = time.perf_counter()
    run = reconcile_scope_graphs(
        database_url(settings, Role.OWNER), ScopeGraphPolicy.from_settings(settings),
        dry_run=args.dry_run, progress=lambda step: print(step, flush=True))
    took = time.perf_counter() - started
    if not run.ran:
        print("another run is under way; nothing done")
        return 1
    build, drop = ("would build", "would drop") if args.dry_run else ("built", "dropped")
    print(f"scope graphs: {build} {len(run.created)}, {drop} {len(run.dropped)}, "
          f"kept {len(run.kept)} ({took:.2f}s)")
    return 0
