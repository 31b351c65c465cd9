"""``haki eval-set export --project P [--since …] [--until …] [--out FILE]``: a project's calls
with feedback as a labelled set that ``haki eval`` reads (``haki.calls.evalset``).

An admin tool: it reads as the owner, one project, every statement naming it (the deployed
stack's ``GET /v1/eval-set`` does the same with the tenant's key).
"""

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from haki.calls.evalset import EvalSetRequest, export_eval_set
from haki.db import Database, Role
from haki.settings import get_settings
from haki.validation import parse
from haki_local.embedded import local_database_url


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("eval-set", help="labelled sets from the calls' feedback")
    actions = parser.add_subparsers(dest="eval_set_command", required=True)
    export = actions.add_parser(
        "export", help="write the project's calls with feedback as a labelled set (JSON) that "
                       "`haki eval` reads")
    export.add_argument("--project", required=True)
    export.add_argument("--since", type=_utc, default=None, metavar="ISO_TIME",
                        help="calls made at or after this time (UTC unless an offset is given)")
    export.add_argument("--until", type=_utc, default=None, metavar="ISO_TIME",
                        help="calls made before this time")
    export.add_argument("--out", type=Path, default=None,
                        help="file to write (default: standard output)")
    export.set_defaults(run=_export)


def _utc(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _export(args: argparse.Namespace) -> int:
    # From the shell, every call of the window that has feedback.
    request = parse(EvalSetRequest, {"project_id": args.project, "since": args.since,
                                     "until": args.until, "limit": None})
    db = Database(local_database_url(get_settings(), Role.OWNER))
    try:
        labelled = export_eval_set(db, args.project, request)
    finally:
        db.close()
    text = labelled.model_dump_json(indent=2)
    if args.out is None:
        sys.stdout.write(text + "\n")
    else:
        args.out.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {len(labelled.queries)} query(ies), {len(labelled.facts)} fact(s) and "
              f"{len(labelled.events)} event(s) to {args.out}", file=sys.stderr)
    return 0
