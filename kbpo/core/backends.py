"""The login backend: Django's ModelBackend with the per-request user read prepared.

Every signed-in request reads its user row (Django checks the session against the
password hash and `is_active` each time); through the ORM that one-row query cost
≈0.45 ms of CPU, as a prepared statement (kbpo/core/prepared.py) ≈0.04 ms. The row is
read live on every request, as before: nothing about the user is cached, so a changed
password, a deactivation or a permission change applies to the next request. Logging
in (password check, django-axes' lockout first) and permissions are Django's own.
"""

from __future__ import annotations

import functools
from contextvars import ContextVar
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.signals import request_finished, request_started
from django.db import connection
from django.dispatch import receiver

from kbpo.core import prepared

# What sessions signed in before this backend name (see kbpo.core.sessions): they are
# read as signed in through this one, which authenticates exactly as that one did.
DJANGO_MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
PATH = "kbpo.core.backends.PreparedModelBackend"


# (pk, row) of the user row the current request's session read fetched beside it. Set
# and taken within one request: cleared when a request starts and when it ends, so a
# row is never used by a later request.
_READ_WITH_SESSION: ContextVar[tuple[Any, tuple] | None] = ContextVar(
    "kbpo_user_read_with_session", default=None)


@receiver(request_started)
@receiver(request_finished)
def _drop_read_row(**kwargs: object) -> None:
    _READ_WITH_SESSION.set(None)


@functools.cache
def user_columns(alias: str = "") -> tuple[str, list[str], int]:
    """The user table's columns as a select list (each prefixed ``alias.``), their
    attribute names in that order and the primary key's position among them."""
    model = get_user_model()
    fields = model._meta.concrete_fields
    prefix = f"{alias}." if alias else ""
    cols = ", ".join(prefix + connection.ops.quote_name(f.column) for f in fields)
    return cols, [f.attname for f in fields], [f.primary_key for f in fields].index(True)


@functools.cache
def _sql() -> str:
    model = get_user_model()
    return (f"SELECT {user_columns()[0]} FROM {connection.ops.quote_name(model._meta.db_table)} "
            f"WHERE {connection.ops.quote_name(model._meta.pk.column)} = %(pk)s")


def read_with_session(pk: object, row: tuple) -> None:
    """Hand `get_user` the row of user `pk` that this request's session read fetched
    (``user_columns("u")``'s order); it is used once, and only for that user."""
    _READ_WITH_SESSION.set((pk, row))


class PreparedModelBackend(ModelBackend):
    def get_user(self, user_id: object) -> AbstractBaseUser | None:
        if connection.vendor != "postgresql":
            return super().get_user(user_id)
        model = get_user_model()
        try:
            pk = model._meta.pk.to_python(user_id)
        except ValidationError:
            return None
        _, attnames, _ = user_columns()
        got = _READ_WITH_SESSION.get()
        _READ_WITH_SESSION.set(None)  # used once
        if got is not None and got[0] == pk:
            row: tuple | None = got[1]
        else:
            with connection.cursor() as cur:
                prepared.execute(cur, "kbpo_auth_user", _sql(), {"pk": pk}, {"pk": "bigint"})
                row = cur.fetchone()
        if row is None:
            return None
        user = model.from_db(connection.alias, attnames, row)
        return user if self.user_can_authenticate(user) else None


__all__ = ["DJANGO_MODEL_BACKEND", "PATH", "PreparedModelBackend", "read_with_session",
           "user_columns"]
