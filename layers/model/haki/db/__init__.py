"""Database access: connections (psycopg 3 + pgvector), migrations, scope indexes."""

from haki.db.connection import Database, database_url
from haki.roles import Role

__all__ = ["Database", "Role", "database_url"]
