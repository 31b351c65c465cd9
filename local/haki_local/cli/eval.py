"""``haki eval FILE``: retrieval quality of the assembler on a labelled data set.

The set is loaded into a scratch database of the embedded server (dropped afterwards); at each
budget its questions run through the assembler, then with each part switched off, then ranked
the design page's way for comparison. Prints a short table (``haki_local.eval_table``), or
with ``--json`` the whole report (docs/eval.md explains both).
"""

import argparse
import json
import logging
from pathlib import Path

from haki.embedding import get_embedder
from haki.errors import ConfigurationError
from haki.models import DEFAULT_BUDGET_TOKENS, MAX_BUDGET_TOKENS
from haki.settings import get_settings
from haki_local.embedded import start_embedded
from haki_local.eval_table import summary
from haki_local.evaluation import ABLATIONS, evaluate, load_labelled_set


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "eval", help="measure retrieval quality on a labelled set (with ablations)",
        description="Load a labelled set (docs/eval.md) into a scratch database and measure "
                    "how much of what each question needs the context packet serves.")
    parser.add_argument("file", type=Path, help="memory document (JSON) plus 'queries'")
    parser.add_argument("--budget", type=_budgets, default=(DEFAULT_BUDGET_TOKENS,),
                        help="token budget(s) of questions that do not set one, comma-"
                             "separated, e.g. 900,2000 (default 900)")
    parser.add_argument("--provider", default=None,
                        help="embedder (default: HAKI_EMBED_PROVIDER)")
    parser.add_argument("--ablations", type=_ablations, default=tuple(ABLATIONS),
                        help="the ablations to run, comma-separated names of the JSON "
                             "report's keys (e.g. dense_only,no_text_arm), or 'none' "
                             "(default: all)")
    parser.add_argument("--misses", action="store_true",
                        help="also list the questions not fully answered")
    parser.add_argument("--json", action="store_true",
                        help="print the whole report as JSON instead of the table")
    parser.set_defaults(run=_eval)


def _budgets(text: str) -> tuple[int, ...]:
    """``"900,2000"`` → ``(900, 2000)``; each a positive integer within the API's bound."""
    try:
        budgets = tuple(int(part) for part in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from exc
    if not budgets or any(not 0 < b <= MAX_BUDGET_TOKENS for b in budgets):
        raise argparse.ArgumentTypeError(f"each budget must be in 1..{MAX_BUDGET_TOKENS}")
    return budgets


def _ablations(text: str) -> tuple[str, ...]:
    """``"dense_only,no_text_arm"`` → those names; ``"none"`` → none; an unknown name is an
    error that lists the known ones."""
    if text.strip() == "none":
        return ()
    names = tuple(part.strip() for part in text.split(","))
    unknown = [name for name in names if name not in ABLATIONS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown ablation(s) {', '.join(unknown)}; known: {', '.join(ABLATIONS)}, none")
    return names


def _eval(args: argparse.Namespace) -> int:
    settings = get_settings()
    if settings.database_url:
        raise ConfigurationError(
            "haki eval loads the set into a scratch database of the embedded server: "
            "unset HAKI_DATABASE_URL")
    if args.provider:
        settings = settings.model_copy(update={"embed_provider": args.provider})
    if not args.verbose:  # the scratch database's own migrations are not the user's concern
        logging.getLogger("haki.db.migrate").setLevel(logging.WARNING)
    labelled = load_labelled_set(args.file)
    report = evaluate(labelled, superuser_url=start_embedded(settings.data_dir),
                      embedder=get_embedder(settings), settings=settings, budgets=args.budget,
                      ablations=args.ablations, with_misses=args.misses, progress=True)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(summary(report, args.file.name))
    return 0
