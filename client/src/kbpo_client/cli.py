"""The `kbpo` command. Exit status: 0 success (for `submit --wait`: scored); 1 the
submission was rejected, failed or withdrawn; 2 `--timeout` passed first; 3 any other
error (usage, network, an HTTP error), with the reason on stderr."""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import math
import os
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import httpx
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kbpo_client import __version__
from kbpo_client.api import Api, ApiError
from kbpo_client.config import ConfigError, Store, config_dir, server_url

OK, REJECTED, TIMED_OUT, ERROR = 0, 1, 2, 3
SCHEMES = ("instance", "predicate", "entity", "entity_relation")
METRICS = ("precision", "recall", "f1")
WAITING = {"uploaded", "validating", "ingested", "planning", "annotating", "scoring"}
NOT_SCORED = {"rejected", "failed", "withdrawn"}
MAX_SHOWN_PROBLEMS = 50
FORMATS = ("tac",)  # what the server's upload takes: TAC KBP, plain or gzip

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


class Failure(Exception):
    """Stop with this message on stderr and this exit status."""

    def __init__(self, message: str, status: int = ERROR) -> None:
        super().__init__(message)
        self.status = status


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # Usage errors exit 3, so 2 keeps meaning "the timeout passed".
        self.print_usage(sys.stderr)
        self.exit(ERROR, f"{self.prog}: error: {message}\n")


# --- helpers ------------------------------------------------------------------------------

def safe(text: object) -> str:
    """Text from the server made safe to print: control and format characters (a name
    could hold terminal escape sequences or a right-to-left override) are shown as
    escapes, and rich's markup is escaped."""
    shown = "".join(ch if ch == "\n" or unicodedata.category(ch) not in ("Cc", "Cf")
                    else ascii(ch)[1:-1] for ch in str(text))
    return escape(shown)


def _api(args: argparse.Namespace, need_token: bool = False) -> Api:
    url = server_url(args.url)
    token = os.environ.get("KBPO_TOKEN", "").strip() or None
    if token is None:
        stored = Store.load().token(url, args.user)
        token = stored[1] if stored else None
    if token is None and need_token:
        who = f" as {args.user}" if args.user else ""
        raise Failure(f"Not logged in to {url}{who}: run `kbpo login --user NAME` (or set "
                      "KBPO_TOKEN).")
    return Api(url, token)


def bounds(lo: float, hi: float, signed: bool = False) -> str:
    """An interval at 3 decimals, its ends rounded outward so that the printed interval
    still contains the computed one."""
    down = math.floor(round(lo * 1000, 6)) / 1000
    up = math.ceil(round(hi * 1000, 6)) / 1000
    return f"[{down:+.3f}, {up:+.3f}]" if signed else f"[{down:.3f}, {up:.3f}]"


def _interval(iv: dict[str, Any] | None) -> str:
    if not iv or iv.get("lo") is None:
        return "—"
    if iv.get("estimate") is None:
        return f"— {bounds(iv['lo'], iv['hi'])}"
    if iv.get("exact"):
        return f"{iv['estimate']:.3f} (exact)"
    return f"{iv['estimate']:.3f} {bounds(iv['lo'], iv['hi'])}"


def _show_json(body: Any) -> None:
    out.print_json(json.dumps(body), indent=1)


def progress_line(p: dict[str, Any]) -> str:
    """One line of a waiting submission's progress: state, labelled share, open
    questions, spend."""
    parts = [f"state {p['state']}"]
    if p["drawn_pairs"]:
        parts.append(f"labelled {p['labelled_pairs']}/{p['drawn_pairs']} pairs "
                     f"({p['percent']}%)")
    parts.append(f"open questions {p['open_questions']}")
    parts.append(f"spend ${p['spend_usd']} of ${p['budget_usd']}")
    return " · ".join(parts)


def print_problems(sub: dict[str, Any]) -> None:
    """The validation errors of a rejected submission (warnings are left out)."""
    rows = [r for r in sub.get("report") or [] if r.get("severity") == "error"]
    counts = sub.get("report_counts") or {}
    err.print(f"Submission {sub['id']} was rejected: {sub.get('n_errors', len(rows))} "
              "error(s).")
    for row in rows[:MAX_SHOWN_PROBLEMS]:
        line = f"line {row['line']}: " if row.get("line") else ""
        hint = f" ({row['hint']})" if row.get("hint") else ""
        err.print(safe(f"  {line}{row['code']}: {row['message']}{hint}"))
    if len(rows) > MAX_SHOWN_PROBLEMS:
        err.print(f"  … {len(rows) - MAX_SHOWN_PROBLEMS} more: `kbpo report {sub['id']}` "
                  "saves them all.")
    if counts:
        err.print(safe("By code: " + ", ".join(f"{code} {n}" for code, n in
                                                  sorted(counts.items()))))
    if sub.get("next_step"):
        err.print(safe(sub["next_step"]))


def scores_table(body: dict[str, Any], scheme: str) -> Table:
    table = Table(title=safe(f"{body['name']} (submission {body['submission']}, "
                               f"{body['state']}) — {scheme} scheme"), title_justify="left")
    table.add_column("metric")
    table.add_column("joint [90% interval]")
    table.add_column("simple [90% interval]")
    row = next((s for s in body["schemes"] if s["scheme"] == scheme), None)
    for metric in METRICS:
        table.add_row(metric, _interval(row and row[metric]["joint"]),
                      _interval(row and row[metric]["simple"]))
    return table


# --- commands -----------------------------------------------------------------------------

def cmd_login(args: argparse.Namespace) -> int:
    url = server_url(args.url)
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    elif sys.stdin.isatty():
        password = getpass.getpass(f"Password for {args.user} at {url}: ")
    else:
        raise Failure("No terminal to ask for the password: pipe it in with "
                      "--password-stdin.")
    if not password:
        raise Failure("Empty password: give it on stdin with --password-stdin, or type it "
                      "at the prompt.")
    host = httpx.URL(url).host
    if url.startswith("http://") and host not in ("localhost", "127.0.0.1", "::1"):
        err.print(safe(f"Warning: {url} is plain HTTP; your password crosses the network "
                       "unencrypted. Use its https:// address if it has one."))
    api = Api(url)
    try:
        token = api.login(args.user, password)
    finally:
        api.close()
    store = Store.load()
    store.save_token(url, args.user, token)
    out.print(safe(f"Logged in to {url} as {args.user}; token stored in {store.path}."))
    return OK


def cmd_submit(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise Failure(f"FILE: {args.file} is not a file.")
    api = _api(args, need_token=True)
    try:
        status, sub = api.upload(path, args.corpus, args.name, args.public, args.drop_invalid)
        if status == 422:
            print_problems(sub)
            return REJECTED
        out.print(safe(f"Submission {sub['id']} uploaded ({sub['state']}): "
                         f"{api.url}/submissions/{sub['id']}/"))
        if sub.get("n_dropped"):
            out.print(f"{sub['n_dropped']} invalid line(s) dropped.")
        if not args.wait:
            return OK
        return wait(api, sub["id"], args.timeout, args.poll)
    finally:
        api.close()


def wait(api: Api, pk: int, timeout: float | None, poll: float,
         clock: Callable[[], float] = time.monotonic) -> int:
    """Follow a submission until it is scored, rejected/failed/withdrawn, or `timeout`
    seconds pass. Each change of progress is printed once: as a line of its own when
    the output is not a terminal (a log stays readable), in place on a terminal."""
    deadline = None if timeout is None else clock() + timeout
    last = ""
    # On a terminal one status line is rewritten in place; elsewhere (a pipe, a CI log)
    # no spinner at all, only the printed lines.
    live = out.status("waiting…") if out.is_terminal else contextlib.nullcontext()
    with live as status:
        while True:
            try:
                p = api.progress(pk)
            except ApiError as exc:
                if exc.status not in (0, 429) and exc.status < 500:
                    raise
                p = None  # throttled, unreachable or a server error: hours of waiting
                # must outlive a passing failure, so try again
                pause = max(poll, exc.retry_after or 0)
            else:
                pause = poll
            if p is not None:
                line = progress_line(p)
                if line != last:
                    if status is not None:
                        status.update(safe(line))
                    else:
                        out.print(safe(line))
                    last = line
                if p["state"] not in WAITING:
                    break
            now = clock()
            if deadline is not None and now >= deadline:
                if status is not None:  # the status line vanishes: keep its last words
                    status.stop()
                    out.print(safe(last))
                err.print(f"Timed out after {timeout:g} s; submission {pk} is still "
                          f"{p['state'] if p else 'waiting'}. Follow it with "
                          f"`kbpo status {pk}`.")
                return TIMED_OUT
            # The last check falls on the deadline itself.
            time.sleep(pause if deadline is None else min(pause, deadline - now))
    if out.is_terminal:
        out.print(safe(last))
    state = p["state"]
    if state == "scored":
        out.print(scores_table(api.scores(pk), "instance"))
        return OK
    sub = api.submission(pk)
    if state == "rejected":
        print_problems(sub)
    else:
        err.print(safe(f"Submission {pk} is {state}. {sub.get('next_step', '')}"))
    return REJECTED


def cmd_status(args: argparse.Namespace) -> int:
    api = _api(args, need_token=True)
    try:
        sub = api.submission(args.id)
        prog = api.progress(args.id) if sub["state"] not in NOT_SCORED else None
    finally:
        api.close()
    if args.json:
        _show_json({"submission": sub, "progress": prog})
        return OK
    out.print(safe(f"Submission {sub['id']}: {sub['name']} on {sub['corpus']} "
                     f"({'public' if sub['public'] else 'private'})"))
    out.print(safe(f"State: {sub['state']}. {sub.get('next_step', '')}"))
    out.print(f"Relations {sub['n_relations']}, errors {sub['n_errors']}, warnings "
              f"{sub['n_warnings']}, dropped {sub['n_dropped']}")
    if prog is not None:
        out.print(safe(progress_line(prog)))
    for event in sub.get("events") or []:
        out.print(safe(f"  {event['created_at']}  {event['from_state'] or '—'} → "
                         f"{event['to_state']}  {event['message']}"))
    if sub["state"] == "rejected":
        print_problems(sub)
    return OK


def cmd_list(args: argparse.Namespace) -> int:
    api = _api(args, need_token=True)
    try:
        subs = api.submissions()
    finally:
        api.close()
    if args.json:
        _show_json(subs)
        return OK
    if not subs:
        out.print("You have no submissions yet: `kbpo submit FILE --corpus C --name N`.")
        return OK
    table = Table()
    for column in ("id", "name", "corpus", "state", "relations", "public", "created"):
        table.add_column(column)
    for s in subs:
        table.add_row(str(s["id"]), safe(s["name"]), safe(s["corpus"]), safe(s["state"]),
                      str(s["n_relations"]), "yes" if s["public"] else "no",
                      s["created_at"][:16].replace("T", " "))
    out.print(table)
    return OK


def cmd_scores(args: argparse.Namespace) -> int:
    api = _api(args)
    try:
        body = api.scores(args.id)
    finally:
        api.close()
    if args.json:
        _show_json(body)
        return OK
    if body["run"] is None:
        out.print(safe(f"{body['name']} (submission {body['submission']}) has no scores "
                         f"yet; it is {body['state']}. `kbpo status {body['submission']}` "
                         "shows its progress."))
        return OK
    out.print(scores_table(body, args.scheme))
    out.print(f"Labels used {body['labels_used']}, draws {body['draws']} "
              f"({body['pending_draws']} pending), crowd cost ${body['cost_usd']}.")
    return OK


def cmd_compare(args: argparse.Namespace) -> int:
    api = _api(args, need_token=True)
    try:
        corpus = api.submission(args.a)["corpus"]
        body = api.compare(corpus, args.a, args.b, args.scheme)
    finally:
        api.close()
    if args.json:
        _show_json(body)
        return OK
    a, b = body["a"], body["b"]
    table = Table(title=safe(f"A = {a['name']} ({a['submission']}), B = {b['name']} "
                               f"({b['submission']}) on {body['corpus']}, {body['scheme']} "
                               f"scheme, {round(100 * body['confidence'])}% intervals"),
                  title_justify="left")
    for column in ("metric", "A", "B", "A − B", "better"):
        table.add_column(column)
    for metric in METRICS:
        d = body["difference"][metric]
        diff = (f"{d['estimate']:+.3f} " if d["estimate"] is not None else "— ") + \
            bounds(d["lo"], d["hi"], signed=True)
        better = {"a": "A", "b": "B"}.get(d["better"] or "", "not distinguishable")
        table.add_row(metric, _interval(a[metric]), _interval(b[metric]), diff, better)
    out.print(table)
    return OK


def cmd_report(args: argparse.Namespace) -> int:
    api = _api(args, need_token=True)
    try:
        sub = api.submission(args.id)
        report: dict[str, Any] = {"submission": sub}
        if sub["state"] not in NOT_SCORED:
            report.update(progress=api.progress(args.id), scores=api.scores(args.id),
                          history={s: api.history(args.id, s)["points"] for s in SCHEMES},
                          samples=api.samples(args.id))
    finally:
        api.close()
    text = json.dumps(report, indent=1, ensure_ascii=False) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
        return OK
    target = Path(args.output or f"submission-{args.id}-report.json")
    target.write_text(text, encoding="utf-8")
    err.print(safe(f"Report of submission {args.id} ({sub['state']}) written to {target}."))
    return OK


# --- the parser ---------------------------------------------------------------------------

def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0 seconds")
    return value


def build_parser() -> Parser:
    # Accepted before and after the command; SUPPRESS keeps the command's parser from
    # overwriting a value given before it with its own default.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=argparse.SUPPRESS,
                        help="the KBPO server (default: $KBPO_URL)")
    common.add_argument("--user", default=argparse.SUPPRESS,
                        help="whose stored token to use (default: who logged in last; "
                        "$KBPO_TOKEN overrides any stored token)")
    parser = Parser(prog="kbpo", description="Submit knowledge bases to KBPO and read "
                    "their scores.", epilog=f"Tokens are stored in {config_dir()} "
                    "($KBPO_CONFIG_DIR). Exit status: 0 success (submit --wait: scored), "
                    "1 rejected/failed/withdrawn, 2 timeout, 3 other errors.",
                    parents=[common])
    parser.add_argument("--version", action="version", version=f"kbpo {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=Parser)

    p = sub.add_parser("login", parents=[common], help="get your API token with your "
                       "password and store it")
    p.add_argument("--password-stdin", action="store_true",
                   help="read the password from stdin instead of prompting")
    p.set_defaults(func=cmd_login, user_required=True)

    p = sub.add_parser("submit", parents=[common], help="upload a KB file")
    p.add_argument("file", metavar="FILE", help="the KB, TAC KBP format, plain or gzip")
    p.add_argument("--corpus", required=True, help="the corpus tag, e.g. demo")
    p.add_argument("--name", required=True, help="the system's name on the leaderboard")
    p.add_argument("--public", action="store_true", help="show it on the public leaderboard")
    p.add_argument("--drop-invalid", action="store_true",
                   help="accept the valid lines of a file with errors")
    p.add_argument("--format", choices=FORMATS, default="tac",
                   help="the KB's format (the server takes TAC KBP, plain or gzip)")
    p.add_argument("--wait", action="store_true",
                   help="follow it until it is scored (exit 0) or rejected (exit 1)")
    p.add_argument("--timeout", type=positive, metavar="S",
                   help="with --wait: give up after S seconds (exit 2)")
    p.add_argument("--poll", type=positive, default=10.0, metavar="S",
                   help="with --wait: seconds between progress checks (default 10)")
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser("status", parents=[common], help="a submission's state and progress")
    p.add_argument("id", type=int, metavar="ID")
    p.add_argument("--json", action="store_true", help="print the API's JSON")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("list", parents=[common], help="your submissions")
    p.add_argument("--json", action="store_true", help="print the API's JSON")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("scores", parents=[common], help="a submission's scores with "
                       "90%% intervals")
    p.add_argument("id", type=int, metavar="ID")
    p.add_argument("--scheme", choices=SCHEMES, default="instance")
    p.add_argument("--json", action="store_true", help="print the API's JSON")
    p.set_defaults(func=cmd_scores)

    p = sub.add_parser("compare", parents=[common], help="the difference between two "
                       "submissions on one corpus")
    p.add_argument("a", type=int, metavar="A")
    p.add_argument("b", type=int, metavar="B")
    p.add_argument("--scheme", choices=SCHEMES, default="instance")
    p.add_argument("--json", action="store_true", help="print the API's JSON")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("report", parents=[common], help="save a submission's whole report "
                       "(state, validation report, scores, history, samples) as JSON")
    p.add_argument("id", type=int, metavar="ID")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="where to write it (default submission-ID-report.json; - for stdout)")
    p.set_defaults(func=cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.url, args.user = getattr(args, "url", None), getattr(args, "user", None)
    if getattr(args, "user_required", False) and not args.user:
        parser.error("login needs --user NAME")
    if getattr(args, "timeout", None) is not None and not args.wait:
        parser.error("--timeout only goes with --wait")
    try:
        return args.func(args)
    except Failure as exc:
        err.print(safe(str(exc)))
        return exc.status
    except (ConfigError, ApiError) as exc:
        status = f"HTTP {exc.status}: " if getattr(exc, "status", 0) else ""
        retry = getattr(exc, "retry_after", None)
        err.print(safe(f"{status}{exc}" + (f" (retry in {retry} s)" if retry else "")))
        return ERROR
    except KeyboardInterrupt:
        err.print("Interrupted.")
        return 130
