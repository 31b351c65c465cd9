"""The base classes of the generated models (``models.py``): their common configuration, and
the helpers a few of them carry."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """Frozen; unknown fields ignored unless the model says otherwise (the request models
    forbid them: a misspelt field is refused, not dropped)."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class ContextPacketModel(Model):
    if TYPE_CHECKING:  # the fields, declared by the generated ContextPacket
        facts: Sequence[Any]
        episodes: Sequence[Any]

    @property
    def is_empty(self) -> bool:
        """Nothing to inject: no fact and no episode."""
        return not self.facts and not self.episodes


class ContextResponseModel(Model):
    if TYPE_CHECKING:  # declared by the generated ContextResponse
        trace_id: UUID | None

    @property
    def served(self) -> bool:
        """Whether the service answered (``False``: the fail-open empty packet)."""
        return self.trace_id is not None
