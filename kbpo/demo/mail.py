"""E-mail during `manage.py demo`: one line per message instead of the whole text."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from django.core.mail.backends.base import BaseEmailBackend
from django.core.mail.message import EmailMessage


class OneLineBackend(BaseEmailBackend):
    """Prints `mail to <recipients>: <subject>`; the demo's progress stays readable."""

    def send_messages(self, email_messages: Sequence[EmailMessage]) -> int:
        for msg in email_messages:
            sys.stdout.write(f"    mail to {', '.join(msg.to)}: {msg.subject}\n")
        sys.stdout.flush()
        return len(email_messages)
