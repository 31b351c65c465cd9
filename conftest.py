"""The tiers of every test of the repository, wherever it lives (``tests/tiers.py``)."""

pytest_plugins = ["tests.tiers"]
