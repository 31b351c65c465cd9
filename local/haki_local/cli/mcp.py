"""``haki mcp``: Haki's memory as MCP tools on stdio for an agent host (see
``haki_local.mcp_server``; configured by HAKI_URL, HAKI_API_KEY and HAKI_PROJECT_ID)."""

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    mcp = subparsers.add_parser(
        "mcp", help="MCP server on stdio for agent hosts (tools: recall, remember, "
                    "record_fact, forget, inspect); configured by HAKI_URL, HAKI_API_KEY and "
                    "HAKI_PROJECT_ID")
    mcp.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    # Imported here: the MCP SDK is only needed by this command.
    from haki_local.mcp_server import main

    return main()
