"""Locust load profile for the score pages (run by bench/bench_locust.py, headless).

Anonymous visitors read the leaderboard page (sorted various ways), its JSON and CSV,
and the health probe; logged-in researchers poll their report and its progress.json.
The target host, the researcher's session cookie and report id come from the runner
through KBPO_LOCUST_COOKIE and KBPO_LOCUST_REPORT.
"""

from __future__ import annotations

import os

from locust import HttpUser, between, task

TAG = os.environ.get("KBPO_LOCUST_CORPUS", "bench")


class Visitor(HttpUser):
    weight = 4
    wait_time = between(0.05, 0.2)

    @task(6)
    def page(self) -> None:
        self.client.get(f"/leaderboard/{TAG}/", name="page")

    @task(2)
    def page_sorted(self) -> None:
        self.client.get(f"/leaderboard/{TAG}/?sort=precision&scheme=entity",
                        name="page sorted")

    @task(2)
    def api(self) -> None:
        self.client.get(f"/api/leaderboard/{TAG}/", name="API JSON")

    @task(1)
    def csv(self) -> None:
        self.client.get(f"/leaderboard/{TAG}/leaderboard.csv", name="CSV")

    @task(2)
    def health(self) -> None:
        self.client.get("/healthz", name="healthz")


class Researcher(HttpUser):
    weight = 1
    wait_time = between(0.1, 0.3)

    def on_start(self) -> None:
        cookie = os.environ.get("KBPO_LOCUST_COOKIE", "")
        if cookie:
            name, _, value = cookie.partition("=")
            self.client.cookies.set(name, value)
        self.report = os.environ.get("KBPO_LOCUST_REPORT", "1")

    @task(1)
    def report_page(self) -> None:
        self.client.get(f"/submissions/{self.report}/report/", name="report page")

    @task(4)
    def progress(self) -> None:
        self.client.get(f"/submissions/{self.report}/report/progress.json",
                        name="progress.json")
