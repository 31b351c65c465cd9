"""Haki core: the context assembler and everything it needs, free of AWS imports.

The same package runs in the Lambda layer, the local server, the CLI, the tests and the
benchmarks. AWS glue (Powertools, IAM auth tokens) lives in the sibling ``haki_aws`` package.
"""

__version__ = "0.1.0"
