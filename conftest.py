"""The tiers of every test of the repository, wherever it lives (``tests/tiers.py``), and the
checkout's folders (models, migrations, data) as the settings of every test where the
environment does not name others (``haki_local.environment``), set before any test module
reads them."""

from haki_local.environment import use_local_defaults

use_local_defaults()

pytest_plugins = ["tests.tiers"]
