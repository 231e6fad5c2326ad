"""SESSION_ENGINE without Redis: Django's database sessions, read by a prepared query."""

from __future__ import annotations

from django.contrib.sessions.backends import db

from . import PreparedRead


class SessionStore(PreparedRead, db.SessionStore):
    pass


__all__ = ["SessionStore"]
