"""``haki openapi``: regenerate ``docs/openapi.json`` from the handlers (or check it)."""

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("openapi", help="regenerate docs/openapi.json")
    parser.add_argument("--check", action="store_true", help="fail if the file is out of date")
    parser.set_defaults(run=_openapi)


def _openapi(args: argparse.Namespace) -> int:
    # The document comes from the Lambda handlers' resolvers (Powertools): imported here only.
    from haki_local.openapi import OPENAPI_PATH, build_openapi, render, write_openapi

    if args.check:
        current = OPENAPI_PATH.read_text(encoding="utf-8") if OPENAPI_PATH.is_file() else ""
        if current != render(build_openapi()):
            print(f"{OPENAPI_PATH} is out of date: run `haki openapi`")
            return 1
        print(f"{OPENAPI_PATH} is up to date")
        return 0
    changed = write_openapi()
    print(f"{'wrote' if changed else 'unchanged'} {OPENAPI_PATH}")
    return 0
