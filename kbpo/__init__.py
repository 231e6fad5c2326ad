"""KBPO project package: settings, URLs, the Celery app and WSGI/ASGI entry points.

The apps live in `kbpo.core` (corpus, schema, accounts), `submissions`, `annotations`,
`estimation` and `kbpo.demo`; their layering is the contract in `.importlinter`.
"""

from .celery import app as celery_app

__all__ = ("celery_app",)
