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

from estimation import leaderboard as lb
from kbpo.core import jobs
from kbpo.core.models import Corpus, Profile
from kbpo.demo.world import docred as docred_world
from kbpo.demo.world import docred_native
from kbpo.demo.world import generate as demo_world
from submissions.models import State, Submission
from submissions.services import create_submission

DEMO_PASSWORD = "kbpo-demo-password"
# The demo systems belong to their own account (no password, cannot log in), so the
# researcher `demo` starts with every upload slot free.
SYSTEMS_OWNER = "demo-systems"


class _Operator:
    """The comparison with truth reads every row, private ones included."""

    is_staff = True
    is_authenticated = True
    pk = None
# States in which a submission is still moving through ingestion and sampling.
WORLDS = ["synthetic", "docred", "docred-tac"]
PIPELINE_BUSY = (State.UPLOADED, State.VALIDATING, State.INGESTED, State.PLANNING)


def against_truth(corpus: Corpus, truth_path: Path
                  ) -> dict[str, tuple[int, int, float, list[str]]]:
    """Per estimator kind, every system's instance-scheme P and R on the leaderboard next
    to truth.json: (intervals containing the truth, intervals, mean absolute error, one
    line per system)."""
    truth = json.loads(truth_path.read_text())["systems"]
    out = {}
    for kind in lb.KINDS:
        board = lb.build(corpus, _Operator(), "instance", "f1", kind)
        covered = total = 0
        errors: list[float] = []
        lines = []
        for row in sorted(board.rows, key=lambda r: r.submission.name):
            exact = truth.get(row.submission.name, {}).get("instance")
            if exact is None:
                continue
            cells = []
            for metric in ("precision", "recall"):
                m, t = row.metrics[metric], exact[metric]
                if m.estimate is None or m.lo is None or m.hi is None:
                    cells.append(f"{metric[0].upper()} n/a (truth {t:.3f})")
                    continue
                inside = m.lo <= t <= m.hi
                covered += inside
                total += 1
                errors.append(abs(m.estimate - t))
                cells.append(f"{metric[0].upper()} {m.estimate:.3f} [{m.lo:.3f}, "
                             f"{m.hi:.3f}] truth {t:.3f}{'' if inside else ' MISSED'}")
            lines.append(f"{row.submission.name:20s} " + "; ".join(cells))
        mae = sum(errors) / len(errors) if errors else float("nan")
        out[kind] = (covered, total, mae, lines)
    return out


class Command(BaseCommand):
    help = ("Run the whole KBPO loop on a demo world: migrate, generate the world (unless "
            "already there; --world docred builds it from a Re-DocRED file given with "
            "--source), load its corpus as 'demo' (or 'docred'), build the exhaustive "
            "sample from gold (a DocRED corpus: import the file's labels as complete gold), "
            "create the accounts 'demo' (researcher) and 'admin' (operator), submit every "
            "demo system, let the simulated crowd answer, and compute the scores. "
            "Development only; safe to re-run.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--world", choices=WORLDS, default="synthetic",
                            help="synthetic: the generated news world (corpus 'demo'); "
                                 "docred: a Re-DocRED file given with --source as a DocRED "
                                 "corpus with its 96 relations, systems in the DocRED "
                                 "result format (corpus 'docred'); docred-tac: the same "
                                 "text mapped to TAC KBP (corpus 'docred-tac')")
        parser.add_argument("--source", type=Path, default=None,
                            help="docred: the DocRED / Re-DocRED JSON file "
                                 "(e.g. dev_revised.json); read, never copied")
        parser.add_argument("--out", type=Path, default=None,
                            help="world directory (default demo/, demo-docred/ or "
                                 "demo-docred-tac/)")
        parser.add_argument("--docs", type=int, default=None,
                            help="documents (default 300 synthetic, 150 docred)")
        parser.add_argument("--systems", type=int, default=6)
        parser.add_argument("--seed", type=int, default=2017)
        parser.add_argument("--crowd-error", type=float, default=0.05,
                            help="mean error rate of the simulated crowd's honest workers "
                                 "(default 0.05, a careful crowd; 0.2 tests the noise "
                                 "correction, KBPO_SOFT_LABELS)")
        parser.add_argument("--confusion", type=Path, default=None,
                            help="simulate_crowd's --confusion: per-worker, per-relation "
                                 "false yes and miss rates (docs/operators/crowd.md)")
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
        world = str(opts["world"])
        docred = world != "synthetic"  # real text from a DocRED file
        source = Path(str(opts["source"])) if opts["source"] else None
        if docred and (source is None or not source.is_file()):
            raise CommandError(f"--world {world} needs --source FILE, a DocRED / Re-DocRED "
                               "JSON file such as dev_revised.json")
        tag = {"synthetic": "demo", "docred": "docred", "docred-tac": "docred-tac"}[world]
        out = Path(str(opts["out"] or ("demo" if tag == "demo" else f"demo-{tag}")))
        opts["docs"] = opts["docs"] or (150 if docred else 300)
        if not 0 <= float(opts["crowd_error"]) < 1:  # type: ignore[arg-type]
            raise CommandError(f"--crowd-error {opts['crowd_error']}: expected a rate in [0, 1)")
        params = {k: opts[k] for k in ("docs", "systems", "seed")}
        if docred:
            params["source"] = str(source.resolve())  # type: ignore[union-attr]
            params["world"] = world  # a directory of the other kind is regenerated
        self._step("Applying database migrations")
        call_command("migrate", verbosity=0)

        stamp = out / "params.json"
        if stamp.exists() and json.loads(stamp.read_text()) == params:
            self._step(f"Demo world already in {out}/ (delete it to regenerate)")
        else:
            self._step(f"Generating the {opts['world']} demo world in {out}/ "
                       f"({params['docs']} documents, {params['systems']} systems)")
            if docred:
                make = docred_native.generate if world == "docred" else docred_world.generate
                try:
                    make(source, out, params["docs"], params["systems"],  # type: ignore[arg-type]
                         params["seed"], demo_world.stderr_progress)
                except ValueError as exc:
                    raise CommandError(str(exc)) from None
            else:
                demo_world.generate(out, progress=demo_world.stderr_progress,
                                    **params)  # type: ignore[arg-type]
            stamp.write_text(json.dumps(params))

        # Every label batch, gold import and submission reaching `scoring` asks for a
        # score recomputation; held here, they are served by the one explicit run below
        # instead of hundreds of runs in eager mode (which ignores the debounce).
        with jobs.coalesced():
            if world == "docred":
                self._load_and_run_native(out, params, opts, tag)
            else:
                self._load_and_run(out, params, opts, tag, docred)
            if not opts["skip_systems"]:
                self._step("Computing joint scores for every system")
                call_command("recompute_scores", corpus=tag, stdout=self.stdout)
        if not opts["skip_systems"]:
            corpus = Corpus.objects.get(tag=tag)
            self._summary(corpus)
            self._against_truth(corpus, out / "truth.json")
        self.stdout.write(self.style.SUCCESS(
            "\nThe demo is ready.\n"
            f"  researcher: demo / {DEMO_PASSWORD}\n"
            f"  operator:   admin / {DEMO_PASSWORD}  (Django admin at /admin/)\n"))

    def _load_and_run_native(self, out: Path, params: dict, opts: dict, tag: str) -> None:
        """The DocRED-native world: the documents as a DocRED corpus, their labels as
        complete gold, systems in the DocRED result format, labels over all 96 relations."""
        docs = str(out / "docs.json")
        self._step(f"Loading the DocRED corpus '{tag}' (96 relations, document-level facts)")
        call_command("load_corpus", docs, tag=tag, format="docred", quiet_progress=True,
                     description="Wikipedia introductions from Re-DocRED, on DocRED's own "
                                 "schema (KBPO DocRED demo)")
        self._step("Importing the file's labels as complete gold (recall is DocRED recall)")
        call_command("import_gold", docs, format="docred", corpus=tag, stdout=self.stdout)
        owner = self._accounts()
        if opts["skip_systems"]:
            return
        corpus = Corpus.objects.get(tag=tag)
        self._submit_systems(out, corpus, owner, pattern="docred_sys_*.json")
        self._wait_for(corpus, PIPELINE_BUSY, int(opts["wait"]))
        self._step("The simulated crowd answers every open question")
        call_command("simulate_crowd", gold=docs, corpus=tag, seed=params["seed"],
                     error_rate=float(opts["crowd_error"]), stdout=self.stdout,
                     **_confusion(opts))

    def _accounts(self) -> User:
        """The demo researcher, the operator, and the systems' owner."""
        self._step("Creating demo accounts")
        researcher = self._user("demo", "demo@kbpo.local", staff=False)
        Profile.objects.get_or_create(user=researcher, defaults={"affiliation": "Demo Lab"})
        self._user("admin", "admin@kbpo.local", staff=True)
        owner, _ = User.objects.get_or_create(username=SYSTEMS_OWNER,
                                              defaults={"email": "systems@kbpo.local"})
        if owner.has_usable_password():
            owner.set_unusable_password()
            owner.save()
        return owner

    def _load_and_run(self, out: Path, params: dict, opts: dict, tag: str,
                      docred: bool) -> None:
        self._step(f"Loading the demo corpus '{tag}'")
        call_command("load_corpus", str(out / "corpus.jsonl"), tag=tag, quiet_progress=True,
                     description=("Wikipedia introductions from Re-DocRED (real text, its "
                                  "own sentences; KBPO real-text demo)" if docred else
                                  "Synthetic news about fictional people, organisations "
                                  "and places (KBPO demo world)"))

        self._step("Building the exhaustive sample for recall (two stages, answered from gold)")
        sample = {"corpus": tag, "docs": min(100, max(1, params["docs"] // 3)),
                  "seed_fraction": 0.2, "seed": params["seed"], "no_tasks": True}
        for _stage in (1, 2):
            call_command("plan_exhaustive", **sample, stdout=self.stdout)
            call_command("import_gold", str(out / "gold.jsonl"), format="kbpo", corpus=tag,
                         only_planned=True, stdout=self.stdout)

        owner = self._accounts()
        if not opts["skip_systems"]:
            corpus = Corpus.objects.get(tag=tag)
            # Real-text systems write a few invalid lines, as real systems do.
            self._submit_systems(out, corpus, owner, drop_invalid=docred)
            self._wait_for(corpus, PIPELINE_BUSY, int(opts["wait"]))  # type: ignore[arg-type]
            self._step("The simulated crowd answers every open question")
            # By default a careful crowd (5% errors, a few spammers): the stored labels
            # are then about 99% right, so the demo's scores sit close to truth.json.
            call_command("simulate_crowd", gold=str(out / "gold.jsonl"), corpus=tag,
                         seed=params["seed"], error_rate=float(opts["crowd_error"]),
                         stdout=self.stdout, **_confusion(opts))

    def _submit_systems(self, out: Path, corpus: Corpus, owner: User,
                        drop_invalid: bool = False, pattern: str = "*.kb") -> None:
        index = json.loads((out / "systems" / "index.json").read_text())
        roles = {s["name"]: s for s in index["systems"]}
        # A TAC KB file or a DocRED result file: the upload recognises which.
        kbs = sorted((out / "systems").glob(pattern))
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
                    drop_invalid=drop_invalid,
                    description=f"Demo-world system ({profile.get('role', 'system')}).",
                    method_description=(
                        f"Simulated extractor with recall about {profile.get('recall', '?')} "
                        f"and target precision {profile.get('target_precision', '?')}."))
            if profile.get("role") == "baseline":
                Submission.objects.filter(pk=sub.pk).update(is_baseline=True)
            sub.refresh_from_db()
            dropped = f", {sub.n_dropped} invalid lines dropped" if drop_invalid else ""
            self.stdout.write(f"    {name}: {sub.state}, {sub.n_relations} relations, "
                              f"{sub.draws.count()} draws{dropped}")

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
        self.stdout.write(f"    leaderboard: /leaderboard/{corpus.tag}/")

    def _against_truth(self, corpus: Corpus, truth_path: Path) -> None:
        """Every system's instance-scheme P and R next to truth.json: interval coverage and
        absolute error, for joint and simple estimates."""
        self._step("Estimates against truth.json (instance scheme, 90% intervals)")
        level = settings.KBPO_CONFIDENCE
        for kind, (covered, total, mae, lines) in against_truth(corpus, truth_path).items():
            for line in lines:
                self.stdout.write(f"    {kind:6s} {line}")
            self.stdout.write(f"    {kind}: {covered}/{total} intervals contain the truth; "
                              f"mean absolute error {mae:.3f}")
        # A MISSED line reads like a bug; it is what an honest interval does now and then.
        self.stdout.write(f"    MISSED is expected now and then: a {level:.0%} interval misses "
                          f"the truth one time in {1 / (1 - level):.0f}, so about "
                          f"{(1 - level) * total:.1f} of each estimator's {total} here (more "
                          f"or fewer by chance; docs/testing.md checks the rate over many "
                          f"worlds).")

    def _step(self, text: str) -> None:
        self.stdout.write(f"==> {text}")

    def _user(self, name: str, email: str, staff: bool) -> User:
        user, created = User.objects.get_or_create(username=name, defaults={"email": email})
        if created:
            user.set_password(DEMO_PASSWORD)
            user.is_staff = user.is_superuser = staff
            user.save()
        return user


def _confusion(opts: dict) -> dict[str, str]:
    """simulate_crowd's --confusion when given."""
    return {} if opts.get("confusion") is None else {"confusion": str(opts["confusion"])}
