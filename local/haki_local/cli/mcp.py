"""``haki mcp``: Haki's memory as MCP tools on stdio for an agent host — the Python SDK's
``haki-mcp`` (``haki_client.mcp``), run from the service's command line; its options and
variables are that command's (``haki mcp --help``)."""

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    mcp = subparsers.add_parser(
        "mcp", add_help=False,
        help="MCP server on stdio for agent hosts (the SDK's haki-mcp; haki mcp --help)")
    mcp.set_defaults(run=_run, forwards_arguments=True)


def _run(args: argparse.Namespace) -> int:
    # Imported here: the MCP SDK is only needed by this command.
    from haki_client.mcp import main

    return main(args.arguments, prog="haki mcp")
