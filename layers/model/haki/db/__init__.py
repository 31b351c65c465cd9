"""Database access: connections (psycopg 3 + pgvector), migrations, scope indexes."""

from haki.db.connection import Database, Role, database_url

__all__ = ["Database", "Role", "database_url"]
