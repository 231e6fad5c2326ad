"""kbpo.core.middleware.CSPMiddleware is django-csp's middleware with the settings' own
policy built once: a nonce, a per-view override and an exemption still go through
django-csp as before."""

from __future__ import annotations

import csp.middleware
import pytest
from csp.constants import NONCE
from csp.exceptions import CSPNonceError
from csp.utils import build_policy as csp_build_policy
from django.http import HttpResponse
from django.test import RequestFactory

from kbpo.core import middleware


def _answer(**response_attrs: object) -> tuple:
    mw = middleware.CSPMiddleware(lambda r: HttpResponse("x"))
    request = RequestFactory().get("/leaderboard/t/")
    mw.process_request(request)
    response = HttpResponse("x")
    for name, value in response_attrs.items():
        setattr(response, name, value)
    return request, mw, response


def test_the_settings_policy_is_built_once_and_is_django_csps(monkeypatch) -> None:
    assert csp.middleware.build_policy is middleware.build_policy
    middleware._BUILT.clear()
    calls = []
    real = middleware._csp_utils.build_policy
    monkeypatch.setattr(middleware._csp_utils, "build_policy",
                        lambda **kw: calls.append(kw) or real(**kw))
    for _ in range(3):
        request, mw, response = _answer()
        mw.process_response(request, response)
        assert response["Content-Security-Policy"] == csp_build_policy()
    assert len(calls) == 2  # the policy and the (empty) report-only one, once each


def test_nonce_override_and_exemption_are_django_csps(settings) -> None:
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": ["'self'"],
                                                       "script-src": ["'self'", NONCE]}}
    request, mw, response = _answer()
    nonce = str(request.csp_nonce)
    mw.process_response(request, response)
    assert f"'nonce-{nonce}'" in response["Content-Security-Policy"]
    # The next request gets its own nonce, not a cached header.
    request2, mw, response2 = _answer()
    nonce2 = str(request2.csp_nonce)
    mw.process_response(request2, response2)
    assert nonce2 != nonce and f"'nonce-{nonce2}'" in response2["Content-Security-Policy"]
    # Asking for a nonce after the header is written is an error, as in django-csp.
    request, mw, response = _answer()
    mw.process_response(request, response)
    with pytest.raises(CSPNonceError):
        str(request.csp_nonce)
    request, mw, response = _answer(_csp_update={"img-src": ["https://example.org"]})
    mw.process_response(request, response)
    assert "img-src https://example.org" in response["Content-Security-Policy"]
    request, mw, response = _answer(_csp_exempt=True)
    mw.process_response(request, response)
    assert "Content-Security-Policy" not in response
