"""The lease a score recomputation holds on its corpus (`ScoringState.lease_until`)."""

from __future__ import annotations

import datetime as dt
import logging
import threading

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from .models import ScoringState

logger = logging.getLogger(__name__)


def lease_seconds() -> float:
    return float(getattr(settings, "KBPO_SCORE_LEASE_SECONDS", 60.0))


class LeaseKeeper:
    """Renews a run's lease on its corpus from a thread, every third of the lease, while
    the run computes: a live run never loses it, a killed one's expires within one lease
    (not after the longest run there could be), and the next run starts then.

    Renewal is a compare-and-set on the lease's end, so a run whose lease was taken over
    (renewals failed for a whole lease: a database outage) learns it (`lost`) and does
    not clear the other's. Not started inside a transaction (a test's), whose rows the
    thread's own connection cannot see.
    """

    def __init__(self, corpus_id: int, until: dt.datetime) -> None:
        self.corpus_id = corpus_id
        self.until = until
        self.lost = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LeaseKeeper:
        if not connection.in_atomic_block:
            self._thread = threading.Thread(target=self._renew, daemon=True,
                                            name=f"kbpo-lease-{self.corpus_id}")
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _renew(self) -> None:
        try:
            while not self._stop.wait(lease_seconds() / 3):
                until = timezone.now() + dt.timedelta(seconds=lease_seconds())
                try:
                    renewed = ScoringState.objects.filter(
                        corpus_id=self.corpus_id, lease_until=self.until,
                    ).update(lease_until=until)
                except DatabaseError:
                    logger.warning("could not renew the scoring lease of corpus %s",
                                   self.corpus_id, exc_info=True)
                    connection.close()
                    continue  # the lease still runs; the next try may reach the database
                if not renewed:
                    self.lost = True
                    logger.error("scoring lease of corpus %s was lost", self.corpus_id)
                    return
                self.until = until
        finally:
            connection.close()
