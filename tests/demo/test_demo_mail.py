"""During `manage.py demo` each e-mail is one line; eager Celery names no broker host."""

from __future__ import annotations

import os
import subprocess
import sys

from django.core import mail
from django.test.utils import override_settings

from tests import ROOT


def test_one_line_per_mail(capsys) -> None:
    with override_settings(EMAIL_BACKEND="kbpo.demo.mail.OneLineBackend"):
        sent = mail.send_mail("[KBPO] sys01 is scored", "Hello\n" * 40, "kbpo@local",
                              ["demo@kbpo.local"])
    out = capsys.readouterr().out
    assert sent == 1
    assert out == "    mail to demo@kbpo.local: [KBPO] sys01 is scored\n"


def test_eager_mode_builds_connections_without_a_hostname_warning() -> None:
    """With no broker (make demo), a connection is in-memory: kombu has no host to miss."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "DJANGO_SETTINGS_MODULE"}}
    code = ("import django, warnings\n"
            "import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'kbpo.settings'\n"
            "django.setup()\n"
            "from django.conf import settings\n"
            "from kbpo.celery import app\n"
            "warnings.simplefilter('error')\n"
            "assert settings.CELERY_TASK_ALWAYS_EAGER\n"
            "with app.connection_for_write() as conn:\n"
            "    conn.info()  # where kombu logs 'No hostname was supplied'\n"
            "    print(conn.transport_cls)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "memory" and "hostname" not in r.stderr.lower()
