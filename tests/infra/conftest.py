"""Fixtures of the infrastructure tests: one synthesis per module (see ``infra_synth``)."""

from collections.abc import Callable
from typing import Any

import pytest
from infra_synth import Synth, synthesize


@pytest.fixture(scope="module")
def synth_factory(tmp_path_factory: pytest.TempPathFactory) -> Callable[[dict[str, Any]], Synth]:
    """``synth_factory(overrides)``: one synthesis; modules keep theirs in a fixture."""

    def make(overrides: dict[str, Any]) -> Synth:
        return synthesize(tmp_path_factory.mktemp("synth"), overrides)

    return make
