"""`manage.py serve_demo [ADDR:PORT]`: runserver, plus the demo's simulated crowd answering
newly posted HITs in the background, paced like a real crowd (annotations.crowd.live).

`make demo` runs it after `manage.py demo`, so an upload made on the site is labelled and
scored within minutes with no other command. The crowd is a thread of the serving
process: Ctrl-C (or the autoreloader restarting the server) stops it with the server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles.management.commands.runserver import (
    Command as RunserverCommand,
)
from django.core.management.base import CommandError, CommandParser

from annotations.crowd import live
from annotations.crowd.simulation import GoldKey, make_pool
from kbpo.core.models import Corpus

# The demo's crowd (`manage.py demo`): twenty workers, a careful 5% error rate.
CROWD_WORKERS = 20


class Command(RunserverCommand):
    help = ("Serve the site (as runserver) while a simulated crowd answers the demo "
            "corpus's newly posted HITs, paced like a real crowd. Development only; "
            "the simulated crowd backend only.")

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--world", type=Path, default=Path("demo"),
                            help="the demo world directory written by `manage.py demo` "
                                 "(its gold.jsonl is the crowd's answer key; default demo/)")
        parser.add_argument("--corpus", default=None,
                            help="corpus tag whose HITs the crowd answers (default: demo, "
                                 "or docred for a world built from Re-DocRED)")
        parser.add_argument("--crowd-error", type=float, default=0.05,
                            help="mean error rate of the honest workers (default 0.05)")
        parser.add_argument("--crowd-pace", type=float, default=1.0,
                            help="multiplies the crowd's working times (default 1: a few "
                                 "seconds per question; 0.1 is ten times faster)")
        parser.add_argument("--no-crowd", action="store_true",
                            help="serve only; open HITs wait for `manage.py simulate_crowd`")

    def handle(self, *args: object, **options: object) -> None:
        self.crowd_options = None
        if settings.PRODUCTION:
            raise CommandError("serve_demo is the demo's server: it refuses to run with "
                               "KBPO_ENV=production")
        if settings.KBPO_CROWD_BACKEND != "simulated":
            # Served all the same (make demo must not fail), but HITs of the local and
            # MTurk backends are people's work: the simulated crowd never answers them.
            self.stderr.write(f"KBPO_CROWD_BACKEND is {settings.KBPO_CROWD_BACKEND!r}: "
                              "serving without the simulated crowd.")
        elif not options["no_crowd"]:
            self.crowd_options = self._check(options)
        super().handle(*args, **options)

    def _check(self, options: dict) -> dict:
        """Refuse what the crowd cannot work with before the server starts."""
        world = Path(str(options["world"]))
        gold = world / "gold.jsonl"
        if not gold.is_file():
            raise CommandError(f"--world {world}: no gold.jsonl there; run `manage.py demo "
                               f"--out {world}` first")
        params_file = world / "params.json"
        params = json.loads(params_file.read_text()) if params_file.is_file() else {}
        tag = str(options["corpus"] or ("docred" if "source" in params else "demo"))
        if not Corpus.objects.filter(tag=tag).exists():
            raise CommandError(f"--corpus {tag}: no such corpus; run `manage.py demo` first")
        error = float(options["crowd_error"])
        if not 0 <= error < 1:
            raise CommandError(f"--crowd-error {error}: expected a rate in [0, 1)")
        pace = float(options["crowd_pace"])
        if not pace > 0:
            raise CommandError(f"--crowd-pace {pace}: expected a positive factor")
        return {"gold": gold, "tag": tag, "seed": int(params.get("seed", 2017)),
                "error": error, "pace": pace}

    def inner_run(self, *args: object, **options: object) -> None:
        if not os.environ.get("KBPO_PUBLIC_URL") and not settings.KBPO_SITE_ORIGIN:
            # Links in e-mails point at this server, not at the default localhost:8000
            # (make demo PORT=8010).
            host = "localhost" if self.addr in ("0.0.0.0", "::", "") else self.addr
            host = f"[{host}]" if ":" in host else host
            settings.KBPO_PUBLIC_URL = f"http://{host}:{self.port}"
        # The serving process only (with the autoreloader, its child): one crowd per server.
        if self.crowd_options is not None and not live.STATUS.running:
            opts = self.crowd_options
            corpus = Corpus.objects.get(tag=opts["tag"])
            crowd = live.LiveCrowd(key=GoldKey.load(opts["gold"]),
                                   pool=make_pool(CROWD_WORKERS, opts["error"], opts["seed"]),
                                   corpus_id=corpus.pk, seed=opts["seed"],
                                   pace=opts["pace"])
            live.start(crowd, corpus.tag, poll=min(1.0, opts["pace"]))
            self.stdout.write(f"A simulated crowd of {CROWD_WORKERS} workers answers new "
                              f"HITs of corpus '{corpus.tag}' (see /operator/).")
        super().inner_run(*args, **options)
