"""bench_recompute's saved databases: a built database kept as a Postgres template
with the bench's state beside it (`--save-db`), and a copy of it started from
(`--from-db`)."""

from __future__ import annotations

from bench_common import _admin


def save(target: str, data: dict, base: str, name: str) -> None:
    """Keep the database as `target` (a template copy) and the bench's state beside it."""
    import pickle

    import django.db

    crowd = data["crowd"]
    raw, corpus = (crowd.raw if crowd else None), data["corpus"]
    if crowd is not None:
        crowd.raw = None  # a cursor does not pickle
    with open(f"/tmp/{target}.pickle", "wb") as f:
        pickle.dump({**data, "corpus": corpus.pk}, f)
    if crowd is not None:
        crowd.raw = raw
    django.db.connections.close_all()  # a template must have no other session
    _admin(base, f'DROP DATABASE IF EXISTS "{target}"')
    _admin(base, f'CREATE DATABASE "{target}" TEMPLATE "{name}"')
    print(f"saved the database as {target}, the state in /tmp/{target}.pickle")


def restore(source: str) -> dict:
    """The state `save` kept, with Django set up on the copied database."""
    import pickle

    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)  # a copy saved by older code
    from kbpo.core.models import Corpus

    with open(f"/tmp/{source}.pickle", "rb") as f:
        data = pickle.load(f)
    data["corpus"] = Corpus.objects.get(pk=data["corpus"])
    return data
