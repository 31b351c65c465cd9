"""``haki load``, ``haki resolve`` and ``haki context``: write memory, settle conflicts, ask
for context, from the shell.

They are admin tools and act as the owner (no API key: the runtime role's row-level security
follows a key, ``haki_tenant``), through the routes' own core: ``load`` writes through the
write API's statements (as written, without its rules), ``resolve`` is
``POST /v1/conflicts/{id}/resolve``, and ``context`` prints exactly the body
``POST /v1/context`` returns. Every statement still names its exact scope.
"""

import argparse
import json
import sys
from pathlib import Path
from uuid import UUID

from haki.assembler import RetrievalConfig, assemble
from haki.assembler.render import render_packet
from haki.db import Database, Role
from haki.embedding import get_embedder
from haki.memory.api import ResolveRequest
from haki.memory.conflicts import resolve
from haki.models import ContextRequest
from haki.settings import get_settings
from haki.validation import parse
from haki_local.documents import parse_document
from haki_local.embedded import local_database_url
from haki_local.writer import MemoryWriter


def register(subparsers: argparse._SubParsersAction) -> None:
    load = subparsers.add_parser(
        "load", help="load a memory document (JSON, or JSON Lines with a 'type' per record)")
    load.add_argument("file", type=Path)
    load.set_defaults(run=_load)

    resolve = subparsers.add_parser(
        "resolve", help="resolve an open conflict set: keep one fact, supersede the others")
    resolve.add_argument("conflict_id", type=UUID)
    resolve.add_argument("--project", required=True)
    resolve.add_argument("--keep", required=True, type=UUID, help="the fact that stays active")
    resolve.set_defaults(run=_resolve)

    context = subparsers.add_parser("context", help="assemble a context packet for a query")
    context.add_argument("query")
    context.add_argument("--project", required=True)
    context.add_argument("--subject", required=True)
    context.add_argument("--budget", default=None,
                         help="token budget (default 900); must be a positive integer")
    context.add_argument("--purpose", default=None)
    context.add_argument("--render", action="store_true",
                         help="print the prompt-ready <haki_memory> block instead of JSON")
    context.set_defaults(run=_context)


def _load(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    settings = get_settings()
    document = parse_document(args.file)
    db = Database(local_database_url(settings, Role.OWNER))
    with tqdm(total=MemoryWriter.steps(document), unit="rec",
              desc=f"loading {args.file.name}", file=sys.stderr) as bar:
        summary = MemoryWriter(db, get_embedder(settings)).write(document, progress=bar.update)
    print(json.dumps({
        "facts": summary.facts, "events": summary.events,
        "conflicts_opened": summary.conflicts_opened,
        "conflicts_resolved": summary.conflicts_resolved,
    }))
    return 0


def _resolve(args: argparse.Namespace) -> int:
    """The core of ``POST /v1/conflicts/{id}/resolve``, with the project as the key's scope."""
    db = Database(local_database_url(get_settings(), Role.OWNER))
    request = parse(ResolveRequest, {"project_id": args.project, "keep_fact_id": str(args.keep)})
    resolved = resolve(db, args.project, args.conflict_id, request)
    print(json.dumps({"conflict_id": str(resolved.conflict_id), "kept": str(resolved.kept_fact_id),
                      "superseded": [str(i) for i in resolved.superseded_fact_ids]}))
    return 0


def _context(args: argparse.Namespace) -> int:
    request = parse(ContextRequest, {
        "project_id": args.project, "subject_id": args.subject, "query": args.query,
        "purpose": args.purpose,
        **({"budget_tokens": _budget(args.budget)} if args.budget is not None else {}),
    })
    settings = get_settings()
    embedder = get_embedder(settings)
    assembly = assemble(
        request, lambda: embedder.embed_query(request.query),
        db=Database(local_database_url(settings, Role.OWNER)),
        config=RetrievalConfig.from_settings(settings))
    if args.render:
        print(render_packet(assembly.response.packet))
    else:
        print(assembly.response.model_dump_json())
    return 0


def _budget(raw: str) -> int | str:
    """The shell gives text: a whole number becomes the integer the API would receive;
    anything else is passed on as the string it is, for the validation to refuse the same way
    it refuses that string over HTTP."""
    try:
        return int(raw)
    except ValueError:
        return raw
