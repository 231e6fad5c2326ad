"""SESSION_ENGINE with Redis: Django's cached_db sessions (read from the cache, written
through to the table); a cache miss reads the table by a prepared query."""

from __future__ import annotations

from django.contrib.sessions.backends import cached_db

from . import PreparedRead


class SessionStore(PreparedRead, cached_db.SessionStore):
    pass


__all__ = ["SessionStore"]
