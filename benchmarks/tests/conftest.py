"""The benchmark harness's tests reuse the suite's fixtures: an embedded PostgreSQL of their
own, and a ``haki serve`` of their own for the load test."""

from tests.conftest import pg_superuser_url, server_data_dir
from tests.e2e.conftest import data_dir, server

__all__ = ["data_dir", "pg_superuser_url", "server", "server_data_dir"]
