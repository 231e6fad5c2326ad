"""`manage.py demo`: build the demo world, load it and create the demo accounts."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kbpo import demo_world
from kbpo.models import Profile

DEMO_PASSWORD = "kbpo-demo-password"


class Command(BaseCommand):
    help = ("Set up the local demo: migrate, generate the demo world (unless already there), "
            "load its corpus as 'demo', and create the accounts 'demo' (researcher) and "
            "'admin' (operator). Development only.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, default=Path("demo"))
        parser.add_argument("--docs", type=int, default=300)
        parser.add_argument("--systems", type=int, default=6)
        parser.add_argument("--seed", type=int, default=2017)

    def handle(self, *args: object, **opts: object) -> None:
        if settings.PRODUCTION:
            raise CommandError("the demo creates accounts with known passwords: it refuses "
                               "to run with KBPO_ENV=production")
        out: Path = opts["out"]  # type: ignore[assignment]
        params = {k: opts[k] for k in ("docs", "systems", "seed")}
        self._step("Applying database migrations")
        call_command("migrate", verbosity=0)

        stamp = out / "params.json"
        if stamp.exists() and json.loads(stamp.read_text()) == params:
            self._step(f"Demo world already in {out}/ (delete it to regenerate)")
        else:
            self._step(f"Generating the demo world in {out}/ ({params['docs']} documents, "
                       f"{params['systems']} systems)")
            demo_world.generate(out, progress=demo_world.stderr_progress,
                                **params)  # type: ignore[arg-type]
            stamp.write_text(json.dumps(params))

        self._step("Loading the demo corpus")
        call_command("load_corpus", str(out / "corpus.jsonl"), tag="demo", quiet_progress=True,
                     description="Synthetic news about fictional people, organisations "
                                 "and places (KBPO demo world)")

        self._step("Building the exhaustive sample for recall (two stages, answered from gold)")
        sample = {"corpus": "demo", "docs": min(100, max(1, params["docs"] // 3)),
                  "seed_fraction": 0.2, "seed": params["seed"], "no_tasks": True}
        for _stage in (1, 2):
            call_command("plan_exhaustive", **sample, stdout=self.stdout)
            call_command("import_gold", str(out / "gold.jsonl"), format="kbpo", corpus="demo",
                         only_planned=True, stdout=self.stdout)

        self._step("Creating demo accounts")
        researcher = self._user("demo", "demo@kbpo.local", staff=False)
        Profile.objects.get_or_create(user=researcher, defaults={"affiliation": "Demo Lab"})
        self._user("admin", "admin@kbpo.local", staff=True)
        self.stdout.write(self.style.SUCCESS(
            "\nThe demo is ready.\n"
            f"  researcher: demo / {DEMO_PASSWORD}\n"
            f"  operator:   admin / {DEMO_PASSWORD}  (Django admin at /admin/)\n"))

    def _step(self, text: str) -> None:
        self.stdout.write(f"==> {text}")

    def _user(self, name: str, email: str, staff: bool) -> User:
        user, created = User.objects.get_or_create(username=name, defaults={"email": email})
        if created:
            user.set_password(DEMO_PASSWORD)
            user.is_staff = user.is_superuser = staff
            user.save()
        return user
