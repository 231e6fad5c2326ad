"""POST /api/auth/token/: a username and password exchanged for the account's API token
(the one /accounts/token/ manages), for scripts and the `kbpo` client.

Throttled three ways, since every attempt costs a password hash and a password is
guessable: attempts per client address (KBPO_TOKEN_LOGIN_RATE_PER_IP per window),
failures per username (KBPO_TOKEN_LOGIN_FAILURES_PER_USER per window, counted alike for
names that exist and names that do not), and django-axes' lockout, which the site's
login shares. A wrong password and an unknown username get the same answer.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.contrib.auth import authenticate
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kbpo.core import security

WRONG = ("Wrong username or password. Check both (the username is case sensitive) or reset "
         "the password at /accounts/password-reset/.")


class TokenLoginSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150, trim_whitespace=False)
    password = serializers.CharField(max_length=4096, trim_whitespace=False,
                                     style={"input_type": "password"})


def _user_key(username: str) -> str:
    # A digest: the name is the client's own text, and cache keys have a length limit.
    return "token-login-user:" + hashlib.sha256(username.lower().encode()).hexdigest()


def _throttled(verdict: security.Verdict, what: str) -> Response:
    return Response({"detail": f"Too many {what}; try again in {verdict.retry_after} "
                               "seconds.", "code": "throttled"},
                    status=status.HTTP_429_TOO_MANY_REQUESTS,
                    headers={"Retry-After": str(verdict.retry_after)})


class TokenLoginView(APIView):
    authentication_classes: list = []  # the body carries the credentials; no session
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="auth_token_login", summary="Exchange a username and password for "
        "your API token",
        description="Answers the account's API token, creating it if it has none (the "
        "same token `/accounts/token/` shows and revokes; send it as `Authorization: "
        "Token <key>`). Throttled per client address and per username.",
        request=TokenLoginSerializer,
        responses={200: inline_serializer("TokenLoginAnswer", {
                       "token": serializers.CharField(),
                       "username": serializers.CharField()}),
                   400: OpenApiResponse(description="A field is missing or too long; the "
                                                    "body names it."),
                   401: OpenApiResponse(description="Wrong username or password (the same "
                                                    "answer for both)."),
                   429: OpenApiResponse(description="Too many attempts; `Retry-After` "
                                                    "says when to try again.")})
    def post(self, request: Request) -> Response:
        ip = security.client_ip(request) or "unknown"
        verdict = security.take(f"token-login-ip:{ip}", settings.KBPO_TOKEN_LOGIN_RATE_PER_IP,
                                settings.KBPO_TOKEN_LOGIN_RATE_WINDOW)
        if not verdict.allowed:
            return _throttled(verdict, "login attempts from your address")
        ser = TokenLoginSerializer(data=request.data)
        if not ser.is_valid():
            return Response(ser.errors, status=status.HTTP_400_BAD_REQUEST)
        username, password = ser.validated_data["username"], ser.validated_data["password"]
        per_user = settings.KBPO_TOKEN_LOGIN_FAILURES_PER_USER
        window = settings.KBPO_TOKEN_LOGIN_FAILURE_WINDOW
        if not (state := security.peek(_user_key(username), per_user, window)).allowed:
            return _throttled(state, "failed logins for this username")
        # The plain HttpRequest: django-axes records the failure and marks a lockout on it.
        http_request = request._request
        user = authenticate(http_request, username=username, password=password)
        if getattr(http_request, "axes_locked_out", False):
            # Answered here as JSON; AxesMiddleware would replace it with its HTML page.
            http_request.axes_locked_out = False
            return Response({"detail": "Too many failed logins from your address; try again "
                                       "later.", "code": "locked_out"},
                            status=status.HTTP_429_TOO_MANY_REQUESTS,
                            headers={"Retry-After": str(int(
                                settings.AXES_COOLOFF_TIME.total_seconds()))})
        if user is None:
            security.take(_user_key(username), per_user, window)
            return Response({"detail": WRONG, "code": "wrong_credentials"},
                            status=status.HTTP_401_UNAUTHORIZED,
                            headers={"WWW-Authenticate": "Token"})
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key, "username": user.get_username()})
