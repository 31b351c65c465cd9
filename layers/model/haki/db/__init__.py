"""Database access: connections (psycopg 3 + pgvector), migrations, scope indexes."""

from haki.db.connection import Database
from haki.roles import Role

__all__ = ["Database", "Role"]
