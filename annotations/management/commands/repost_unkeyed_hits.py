"""`manage.py repost_unkeyed_hits [--dry-run]`: once, after the migration that keyed task
pages (annotations 0016_hit_url_key), for live MTurk HITs posted before it."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from annotations.crowd.slots import repost_unkeyed


class Command(BaseCommand):
    help = ("Retire posted MTurk HITs whose task URL is the old /annotate/hit/<id>/ (it "
            "answers 404 now) and post their open questions again under keyed URLs. "
            "Confirmed work on them is still collected, reviewed and paid.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true",
                            help="list the HITs only; change nothing")

    def handle(self, *args: object, **opts: object) -> None:
        reposted, skipped = repost_unkeyed(dry_run=bool(opts["dry_run"]))
        verb = "would re-post" if opts["dry_run"] else "re-posted"
        self.stdout.write(f"{verb} {len(reposted)} HIT(s): {reposted}")
        if skipped:
            self.stdout.write(f"left alone (no submission to re-plan; expire them and "
                              f"re-plan their work): {skipped}")
