"""Benchmarks of the context assembler (``python -m benchmarks.scale``). They run from a
source checkout: importing the package gives the core the checkout's folders (models,
migrations, data) where the environment does not name others (``haki_local.environment``)."""

from haki_local.environment import use_local_defaults

use_local_defaults()
