"""/api/docs/ in headless Chromium with every non-local request blocked: Swagger UI
comes from our own static files, starts under the site's Content-Security-Policy and
lists the API's operations."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.chromium import launched_chromium

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Operations the page must list (method, path as Swagger UI shows it).
EXPECTED = [("POST", "/api/submissions/"), ("GET", "/api/submissions/{id}/"),
            ("POST", "/api/auth/token/"), ("GET", "/api/submissions/{id}/scores/"),
            ("GET", "/api/compare/{tag}/")]


def test_api_docs_render_operations_offline_under_the_csp(live_server) -> None:
    local = urlsplit(live_server.url).netloc
    blocked: list[str] = []
    refused: list[str] = []
    errors: list[str] = []
    with launched_chromium() as browser:
        context = browser.new_context()

        def route(r: object) -> None:
            if urlsplit(r.request.url).netloc == local:
                r.continue_()
            else:  # no network: a CDN the page still used would show up here
                blocked.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # Chromium reports every CSP refusal on the console ("Refused to ...").
        page.on("console", lambda m: refused.append(m.text)
                if "Content Security Policy" in m.text else None)
        response = page.goto(f"{live_server.url}/api/docs/")
        assert "script-src 'self';" in response.headers["content-security-policy"] + ";"
        page.wait_for_selector(".opblock", state="attached")
        shown = {(page.locator(".opblock-summary-method").nth(i).inner_text().strip(),
                  page.locator(".opblock-summary-path").nth(i).inner_text().strip()
                  .replace("\u200b", ""))
                 for i in range(page.locator(".opblock").count())}
        context.close()
    assert blocked == [], f"the page asked for non-local resources: {blocked}"
    assert refused == [], f"the Content-Security-Policy refused: {refused}"
    assert errors == [], f"JavaScript errors on the page: {errors}"
    missing = [op for op in EXPECTED if op not in shown]
    assert missing == [], f"operations not shown: {missing} (shown: {sorted(shown)})"
