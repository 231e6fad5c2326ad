"""Account defences (issue 41): e-mail confirmation before an account may upload,
registration and password-reset throttles, and the login lockout's 429 page with a
Retry-After.

Accounts made by registration start unconfirmed (`Profile.email_confirmed`); accounts
made any other way (createsuperuser, the admin, the demo) and those that existed before
confirmation was required count as confirmed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.contrib.auth.forms import PasswordResetForm
from django.contrib.auth.models import AbstractBaseUser
from django.core import signing
from django.core.mail import send_mail
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from . import security
from .models import Profile

CONFIRM_SALT = "kbpo.accounts.confirm-email"
UNCONFIRMED_MESSAGE = ("Confirm your e-mail address before you upload: open the link we "
                       "mailed you when you signed up (your profile page sends it again).")


def email_confirmed(user: Any) -> bool:
    """Whether the user may upload: superusers always; others unless registration left
    their address unconfirmed."""
    if getattr(user, "is_superuser", False):
        return True
    return not Profile.objects.filter(user_id=user.pk, email_confirmed=False).exists()


def confirmation_token(user: AbstractBaseUser) -> str:
    """A signed token for the user's current address: a changed address voids it."""
    return signing.dumps({"u": user.pk, "e": getattr(user, "email", "")}, salt=CONFIRM_SALT)


def confirm(token: str) -> AbstractBaseUser | None:
    """Mark the token's user confirmed; the user, or None for a bad or old token."""
    from django.contrib.auth import get_user_model

    try:
        data = signing.loads(token, salt=CONFIRM_SALT,
                             max_age=settings.KBPO_EMAIL_CONFIRM_MAX_AGE)
    except signing.BadSignature:
        return None
    user = get_user_model().objects.filter(pk=data.get("u")).first()
    if user is None or getattr(user, "email", "") != data.get("e"):
        return None
    Profile.objects.update_or_create(user=user, defaults={"email_confirmed": True})
    return user


def send_confirmation(request: HttpRequest, user: Any) -> None:
    link = request.build_absolute_uri(reverse("confirm-email",
                                              args=[confirmation_token(user)]))
    send_mail("Confirm your KBPO account",
              f"Hello {user.username},\n\nopen this link to confirm your address; until you "
              f"do, your account cannot upload knowledge bases:\n\n{link}\n\nThe link works "
              f"for {settings.KBPO_EMAIL_CONFIRM_MAX_AGE // 3600} hours. If you did not "
              "create this account, ignore this message.\n",
              None, [user.email])


def too_many(request: HttpRequest, title: str, message: str,
             retry_after: int) -> HttpResponse:
    """A 429 page that says when to come back, in words and in Retry-After."""
    wait = max(1, retry_after)
    response = render(request, "registration/throttled.html",
                      {"title": title, "message": message, "wait": wait}, status=429)
    response["Retry-After"] = str(wait)
    return response


class ThrottledPasswordResetForm(PasswordResetForm):
    """Sends at most KBPO_PASSWORD_RESET_RATE_PER_ACCOUNT reset mails per account per
    KBPO_PASSWORD_RESET_RATE_WINDOW seconds. Requests beyond it get the same "sent"
    page (the page never tells which addresses have accounts) but no mail."""

    def get_users(self, email: str) -> Iterator[Any]:
        for user in super().get_users(email):
            if security.take(f"reset-account:{user.pk}",
                             settings.KBPO_PASSWORD_RESET_RATE_PER_ACCOUNT,
                             settings.KBPO_PASSWORD_RESET_RATE_WINDOW).allowed:
                yield user


def lockout_response(request: HttpRequest, original_response: HttpResponse | None = None,
                     credentials: dict | None = None) -> HttpResponse:
    """django-axes' lockout answer (AXES_LOCKOUT_CALLABLE): its page, with Retry-After.

    The lockout counts failures per address and per account (AXES_LOCKOUT_PARAMETERS),
    so the wait is the whole cool-off: the count restarts once it has passed.
    """
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    response = render(request, "registration/locked_out.html", {
        "failure_limit": settings.AXES_FAILURE_LIMIT, "cooloff_seconds": seconds},
        status=429)
    response["Retry-After"] = str(seconds)
    return response
