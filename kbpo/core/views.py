"""Core pages: home, accounts (register, profile, API token)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from . import accounts, backends, security
from .forms import ProfileForm, RegisterForm
from .models import Corpus, Profile


def home(request: HttpRequest) -> HttpResponse:
    corpora = Corpus.objects.annotate(n_docs=Count("documents")).order_by("tag")
    return render(request, "kbpo/home.html", {"corpora": corpora})


def register(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("profile")
    if request.method == "POST":
        # Per address: every per-user limit would otherwise be per sock puppet.
        verdict = security.take(f"register-ip:{security.client_ip(request) or 'unknown'}",
                                settings.KBPO_REGISTER_RATE_PER_IP,
                                settings.KBPO_REGISTER_RATE_WINDOW)
        if not verdict.allowed:
            return accounts.too_many(request, "Too many sign-ups",
                                     "Too many accounts were created from your address.",
                                     verdict.retry_after)
    form = RegisterForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        accounts.send_confirmation(request, user)
        login(request, user, backend=backends.PATH)
        messages.success(request, f"Welcome, {user.username}. We sent a link to "
                                  f"{user.email}: open it to confirm your address before "
                                  "you upload.")
        return redirect("home")
    return render(request, "registration/register.html", {"form": form})


def confirm_email(request: HttpRequest, token: str) -> HttpResponse:
    """The link registration mails: confirms the address (idempotent)."""
    user = accounts.confirm(token)
    if user is None:
        messages.error(request, "This confirmation link is invalid or too old. Log in and "
                                "ask for a new one on your profile page.")
        return redirect("profile" if request.user.is_authenticated else "login")
    messages.success(request, "Your address is confirmed: you can upload now.")
    return redirect("profile" if request.user.is_authenticated else "login")


@login_required
@require_POST
def resend_confirmation(request: HttpRequest) -> HttpResponse:
    if accounts.email_confirmed(request.user):
        messages.info(request, "Your address is already confirmed.")
        return redirect("profile")
    verdict = security.take(f"confirm-resend:{request.user.pk}",
                            settings.KBPO_PASSWORD_RESET_RATE_PER_ACCOUNT,
                            settings.KBPO_PASSWORD_RESET_RATE_WINDOW)
    if not verdict.allowed:
        return accounts.too_many(request, "Too many confirmation mails",
                                 "We already sent several confirmation links.",
                                 verdict.retry_after)
    accounts.send_confirmation(request, request.user)
    messages.success(request, f"We sent a new confirmation link to {request.user.email}.")
    return redirect("profile")


class PasswordResetView(auth_views.PasswordResetView):
    """Django's reset view, throttled per address (429 with Retry-After) and, in its
    form, per account (no mail beyond the limit, the same page)."""

    form_class = accounts.ThrottledPasswordResetForm

    def post(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        verdict = security.take(f"reset-ip:{security.client_ip(request) or 'unknown'}",
                                settings.KBPO_PASSWORD_RESET_RATE_PER_IP,
                                settings.KBPO_PASSWORD_RESET_RATE_WINDOW)
        if not verdict.allowed:
            return accounts.too_many(request, "Too many password resets",
                                     "Too many password resets were asked from your "
                                     "address.", verdict.retry_after)
        return super().post(request, *args, **kwargs)


@login_required
def profile(request: HttpRequest) -> HttpResponse:
    prof, _ = Profile.objects.get_or_create(user=request.user)
    old_email = request.user.email
    form = ProfileForm(request.POST or None, instance=prof, user=request.user)
    if request.method == "POST" and form.is_valid():
        form.save()
        # A confirmed account could otherwise move to any address it likes: the new
        # one must be confirmed before the next upload, as at sign-up.
        if (request.user.email.casefold() != old_email.casefold()
                and not request.user.is_superuser):
            Profile.objects.filter(user=request.user).update(email_confirmed=False)
            # the resend throttle: address changes must not become a mail cannon
            if security.take(f"confirm-resend:{request.user.pk}",
                             settings.KBPO_PASSWORD_RESET_RATE_PER_ACCOUNT,
                             settings.KBPO_PASSWORD_RESET_RATE_WINDOW).allowed:
                accounts.send_confirmation(request, request.user)
                messages.success(request, "Profile saved. We sent a confirmation link "
                                          f"to {request.user.email}: open it before "
                                          "your next upload.")
            else:
                messages.warning(request, "Profile saved. Too many confirmation mails "
                                          "were sent lately: ask for a new link here "
                                          "later, and open it before your next upload.")
            return redirect("profile")
        messages.success(request, "Profile saved.")
        return redirect("profile")
    return render(request, "kbpo/profile.html", {
        "form": form, "email_confirmed": accounts.email_confirmed(request.user)})


@login_required
def api_token(request: HttpRequest) -> HttpResponse:
    token = Token.objects.filter(user=request.user).first()
    # The key is shown once, right after it is created; afterwards only its prefix.
    new_key = request.session.pop("new_api_token", None)
    return render(request, "kbpo/api_token.html", {"token": token, "new_key": new_key})


@login_required
@require_POST
def api_token_create(request: HttpRequest) -> HttpResponse:
    Token.objects.filter(user=request.user).delete()
    token = Token.objects.create(user=request.user)
    request.session["new_api_token"] = token.key
    messages.success(request, "New API token created. Copy it now: it is shown only once.")
    return redirect("api-token")


@login_required
@require_POST
def api_token_revoke(request: HttpRequest) -> HttpResponse:
    deleted, _ = Token.objects.filter(user=request.user).delete()
    if deleted:
        messages.success(request, "API token revoked. Programs using it can no longer log in.")
    else:
        messages.info(request, "You had no API token.")
    return redirect("api-token")
