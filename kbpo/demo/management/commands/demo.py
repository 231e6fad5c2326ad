"""`manage.py demo`: build the demo world, load it and create the demo accounts."""

from __future__ import annotations

import json
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test.utils import override_settings

from kbpo.core import jobs
from kbpo.core.models import Corpus, Profile
from kbpo.demo.world import generate as demo_world
from submissions.models import State, Submission
from submissions.services import create_submission

DEMO_PASSWORD = "kbpo-demo-password"
# The demo systems belong to their own account (no password, cannot log in), so the
# researcher `demo` starts with every upload slot free.
SYSTEMS_OWNER = "demo-systems"
# States in which a submission is still moving through ingestion and sampling.
PIPELINE_BUSY = (State.UPLOADED, State.VALIDATING, State.INGESTED, State.PLANNING)


class Command(BaseCommand):
    help = ("Run the whole KBPO loop on the demo world: migrate, generate the world (unless "
            "already there), load its corpus as 'demo', build the exhaustive sample from gold, "
            "create the accounts 'demo' (researcher) and 'admin' (operator), submit every "
            "demo system, let the simulated crowd answer, and compute the scores. "
            "Development only; safe to re-run.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, default=Path("demo"))
        parser.add_argument("--docs", type=int, default=300)
        parser.add_argument("--systems", type=int, default=6)
        parser.add_argument("--seed", type=int, default=2017)
        parser.add_argument("--skip-systems", action="store_true",
                            help="stop after the corpus, the exhaustive sample and accounts")
        parser.add_argument("--wait", type=int, default=600,
                            help="seconds to wait for Celery workers (when not in eager mode)")

    def handle(self, *args: object, **opts: object) -> None:
        with override_settings(EMAIL_BACKEND="kbpo.demo.mail.OneLineBackend"):
            self._run(**opts)

    def _run(self, **opts: object) -> None:
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

        # Every label batch, gold import and submission reaching `scoring` asks for a
        # score recomputation; held here, they are served by the one explicit run below
        # instead of hundreds of runs in eager mode (which ignores the debounce).
        with jobs.coalesced():
            self._load_and_run(out, params, opts)
            if not opts["skip_systems"]:
                self._step("Computing joint scores for every system")
                call_command("recompute_scores", corpus="demo", stdout=self.stdout)
        if not opts["skip_systems"]:
            self._summary(Corpus.objects.get(tag="demo"))
        self.stdout.write(self.style.SUCCESS(
            "\nThe demo is ready.\n"
            f"  researcher: demo / {DEMO_PASSWORD}\n"
            f"  operator:   admin / {DEMO_PASSWORD}  (Django admin at /admin/)\n"))

    def _load_and_run(self, out: Path, params: dict, opts: dict) -> None:
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
        owner, _ = User.objects.get_or_create(username=SYSTEMS_OWNER,
                                              defaults={"email": "systems@kbpo.local"})
        if owner.has_usable_password():
            owner.set_unusable_password()
            owner.save()
        if not opts["skip_systems"]:
            corpus = Corpus.objects.get(tag="demo")
            self._submit_systems(out, corpus, owner)
            self._wait_for(corpus, PIPELINE_BUSY, int(opts["wait"]))  # type: ignore[arg-type]
            self._step("The simulated crowd answers every open question")
            # A careful crowd (5% errors, a few spammers): majority-vote labels are then
            # about 99% right, so the demo's scores sit close to truth.json.
            call_command("simulate_crowd", gold=str(out / "gold.jsonl"), corpus="demo",
                         seed=params["seed"], error_rate=0.05, stdout=self.stdout)

    def _submit_systems(self, out: Path, corpus: Corpus, owner: User) -> None:
        index = json.loads((out / "systems" / "index.json").read_text())
        roles = {s["name"]: s for s in index["systems"]}
        kbs = sorted((out / "systems").glob("*.kb"))
        self._step(f"Submitting {len(kbs)} demo systems (ingestion, then sampling)")
        for kb in kbs:
            name = kb.stem
            if Submission.objects.filter(corpus=corpus, name=name).exclude(
                    state__in=(State.WITHDRAWN, State.REJECTED, State.FAILED)).exists():
                self.stdout.write(f"    {name}: already submitted")
                continue
            profile = roles.get(name, {})
            with kb.open("rb") as fh:
                sub = create_submission(
                    owner=owner, corpus=corpus, name=name, file=fh, original_name=kb.name,
                    compressed=False, public=True, enforce_limits=False,
                    description=f"Demo-world system ({profile.get('role', 'system')}).",
                    method_description=(
                        f"Simulated extractor with recall about {profile.get('recall', '?')} "
                        f"and target precision {profile.get('target_precision', '?')}."))
            if profile.get("role") == "baseline":
                Submission.objects.filter(pk=sub.pk).update(is_baseline=True)
            sub.refresh_from_db()
            self.stdout.write(f"    {name}: {sub.state}, {sub.n_relations} relations, "
                              f"{sub.draws.count()} draws")

    def _wait_for(self, corpus: Corpus, busy: tuple[str, ...], seconds: int) -> None:
        """With real workers, wait until no submission is still being ingested or planned."""
        deadline = time.monotonic() + seconds
        while True:
            left = Submission.objects.filter(corpus=corpus, state__in=busy).count()
            if not left:
                return
            if time.monotonic() > deadline:
                raise CommandError(f"{left} submission(s) still in {', '.join(busy)} after "
                                   f"{seconds} s: is a Celery worker running?")
            self.stdout.write(f"    waiting for the workers: {left} submission(s) in progress")
            time.sleep(2)

    def _summary(self, corpus: Corpus) -> None:
        rows = Submission.objects.filter(corpus=corpus).order_by("name")
        self._step("Submissions")
        for sub in rows:
            self.stdout.write(f"    {sub.name:28s} {sub.state}")
        self.stdout.write("    leaderboard: /leaderboard/demo/")

    def _step(self, text: str) -> None:
        self.stdout.write(f"==> {text}")

    def _user(self, name: str, email: str, staff: bool) -> User:
        user, created = User.objects.get_or_create(username=name, defaults={"email": email})
        if created:
            user.set_password(DEMO_PASSWORD)
            user.is_staff = user.is_superuser = staff
            user.save()
        return user
