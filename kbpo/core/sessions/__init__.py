"""Login-session engines: Django's `db` and `cached_db` with the database read of a
session as one prepared statement (kbpo/core/prepared.py) instead of an ORM query.

Every signed-in request reads its session (from the table without Redis, and with
Redis whenever the cache entry is missing); the ORM spent ≈0.5 ms of CPU compiling
that one-row query. Reading, writing, expiry and log-out are Django's own.

Sessions signed in before the login backend became kbpo.core.backends' name Django's
ModelBackend; they are read as signed in through ours (the same authentication and
user, read faster), so nobody is logged out by the change.

A session's stored text is signed; checking the signature and decoding it cost ≈0.05 ms
per signed-in request (≈0.007 ms from memory). The text a request reads is almost
always the one it read last time, so the payload of text that passed the check is kept
(`decode`): the same text decodes to the same data without checking it again. Only
text that passed is kept, so a forged or tampered text is still checked (and refused)
every time.

The user row is read in the same statement as the session when the process knows
whose session it is: a session key's user id is remembered from its last decoded data
(`_USER_OF`), and the next read of that key joins that user's row, which the login
backend then takes instead of reading it again (kbpo.core.backends). The row is as
live as a read of its own; a remembered id that no longer matches the session's (or a
missing user) only costs the separate read. A session key seen for the first time in
a process, and a session found in Redis, read the user row on its own as before.
"""

from __future__ import annotations

import functools
from typing import Any

from django.contrib.auth import BACKEND_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.models import Session
from django.core.exceptions import ValidationError
from django.core.signals import setting_changed
from django.db import connection
from django.dispatch import receiver
from django.utils import timezone

from kbpo.core import prepared
from kbpo.core.backends import DJANGO_MODEL_BACKEND, PATH, read_with_session, user_columns
from kbpo.core.kept import Kept

_SQL = (f"SELECT session_data, expire_date FROM {Session._meta.db_table} "
        "WHERE session_key = %(key)s AND expire_date > %(now)s")
_TYPES = {"key": "text", "now": "timestamptz"}
_WITH_USER_TYPES = {**_TYPES, "uid": "bigint"}

# Session key -> the user id its data named when this process last decoded it.
_USER_OF: Kept[str, Any] = Kept(4096)


@functools.cache
def _sql_with_user() -> str:
    """The session read with the row of user %(uid)s beside it (NULLs if there is none)."""
    model = get_user_model()
    cols = user_columns("u")[0]
    return (f"SELECT s.session_data, s.expire_date, {cols} FROM {Session._meta.db_table} s "
            f"LEFT JOIN {connection.ops.quote_name(model._meta.db_table)} u "
            f"ON u.{connection.ops.quote_name(model._meta.pk.column)} = %(uid)s "
            "WHERE s.session_key = %(key)s AND s.expire_date > %(now)s")

# (salt, stored text) -> the serialized payload it decoded to.
_DECODED: Kept[tuple[str, str], bytes] = Kept(4096)


@receiver(setting_changed)
def _forget_decoded(**kwargs: object) -> None:
    _DECODED.forget()  # SECRET_KEY or the serializer may differ now


class PreparedRead:
    """Mixin for django.contrib.sessions' db stores: `_get_session_from_db` as Django's
    (a live row of this key, unexpired, else the key dropped) in one prepared query."""

    session_key: str | None
    _session_key: str | None

    def load(self) -> dict[str, Any]:
        data: dict[str, Any] = super().load()  # type: ignore[misc]
        if data.get(BACKEND_SESSION_KEY) == DJANGO_MODEL_BACKEND:
            data[BACKEND_SESSION_KEY] = PATH
        key, uid = self._session_key, data.get(SESSION_KEY)
        if key and uid is not None and connection.vendor == "postgresql":
            try:
                pk = get_user_model()._meta.pk.to_python(uid)
            except ValidationError:
                pk = None
            if pk is not None:
                _USER_OF.keep(key, pk)
        return data

    def decode(self, session_data: str) -> dict[str, Any]:
        """Django's decode, remembered for text whose signature checked out: a fresh
        dict each time (the caller may change it), the same data as decoding it anew."""
        key = (self.key_salt, session_data)  # type: ignore[attr-defined]
        serializer = self.serializer()  # type: ignore[attr-defined]
        payload = _DECODED.kept(key)
        if payload is not None:
            return serializer.loads(payload)
        data: dict[str, Any] = super().decode(session_data)  # type: ignore[misc]
        if data:  # {}: a bad signature or payload (or an empty session): not kept
            _DECODED.keep(key, serializer.dumps(data))
        return data

    def _get_session_from_db(self) -> Session | None:
        key = self.session_key
        # Off Postgres (SQLite development), Django's own query. A malformed cookie
        # value was already turned into None by the key's setter.
        if key is None or connection.vendor != "postgresql":
            return super()._get_session_from_db()  # type: ignore[misc]
        uid = _USER_OF.kept(key)
        with connection.cursor() as cur:
            if uid is None:
                prepared.execute(cur, "kbpo_session_read", _SQL,
                                 {"key": key, "now": timezone.now()}, _TYPES)
            else:
                prepared.execute(cur, "kbpo_session_user_read", _sql_with_user(),
                                 {"key": key, "now": timezone.now(), "uid": uid},
                                 _WITH_USER_TYPES)
            row: Any = cur.fetchone()
        if row is None:
            self._session_key = None
            return None
        if uid is not None and row[2 + user_columns("u")[2]] is not None:
            read_with_session(uid, tuple(row[2:]))
        return Session(session_key=key, session_data=row[0], expire_date=row[1])


__all__ = ["PreparedRead"]
