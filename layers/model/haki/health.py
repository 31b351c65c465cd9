"""The service's health checks: liveness (the API answers) and readiness (it can reach its
database). Neither needs a key, so neither says anything about the deployment: no version, no
host, no error detail; a database out of reach is the contract's 503 ``service_unavailable``.
"""

from typing import Literal

from pydantic import BaseModel

from haki.db import Database
from haki.errors import ServiceUnavailable

NOT_READY = "not ready: the memory store cannot be reached, retry shortly"


class Health(BaseModel):
    """``ok``: the API answers; ``ready``: it reached its database too."""

    status: Literal["ok", "ready"]


def live() -> Health:
    return Health(status="ok")


def ready(db: Database) -> Health:
    """One round trip to the database (no tenant data read), or 503 ``service_unavailable``
    with a message that names no host, role or cause."""
    try:
        db.fetch_one("SELECT 1", ())
    except ServiceUnavailable:
        raise ServiceUnavailable(NOT_READY) from None
    return Health(status="ready")
