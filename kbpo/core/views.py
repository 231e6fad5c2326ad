"""Core pages: home, accounts (register, profile, API token)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from . import backends
from .forms import ProfileForm, RegisterForm
from .models import Corpus, Profile


def home(request: HttpRequest) -> HttpResponse:
    corpora = Corpus.objects.annotate(n_docs=Count("documents")).order_by("tag")
    return render(request, "kbpo/home.html", {"corpora": corpora})


def register(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("profile")
    form = RegisterForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend=backends.PATH)
        messages.success(request, f"Welcome, {user.username}. Your account is ready.")
        return redirect("home")
    return render(request, "registration/register.html", {"form": form})


@login_required
def profile(request: HttpRequest) -> HttpResponse:
    prof, _ = Profile.objects.get_or_create(user=request.user)
    form = ProfileForm(request.POST or None, instance=prof, user=request.user)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Profile saved.")
        return redirect("profile")
    return render(request, "kbpo/profile.html", {"form": form})


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
