"""Account forms."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User

from .models import Profile


class RegisterForm(UserCreationForm):
    email = forms.EmailField(
        required=True, help_text="Used for password resets and 'your scores are ready' mail.")
    affiliation = forms.CharField(
        max_length=200, required=False,
        help_text="University, lab or company (shown on the leaderboard).")

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip()
        if User.objects.filter(email__iexact=email).exists():
            raise forms.ValidationError(
                "An account already uses this address. Log in, or reset its password.")
        return email

    def save(self, commit: bool = True) -> User:
        user = super().save(commit=False)
        user.email = self.cleaned_data["email"]
        if commit:
            user.save()
            Profile.objects.update_or_create(
                user=user, defaults={"affiliation": self.cleaned_data.get("affiliation", ""),
                                     "email_confirmed": False})
        return user


class ProfileForm(forms.ModelForm):
    first_name = forms.CharField(max_length=150, required=False)
    last_name = forms.CharField(max_length=150, required=False)
    email = forms.EmailField(required=True)
    homepage = forms.URLField(required=False, assume_scheme="https")

    class Meta:
        model = Profile
        fields = ("affiliation", "homepage")

    def __init__(self, *args: object, user: User, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.user = user
        self.fields["first_name"].initial = user.first_name
        self.fields["last_name"].initial = user.last_name
        self.fields["email"].initial = user.email
        self.order_fields(["first_name", "last_name", "email", "affiliation", "homepage"])

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip()
        if User.objects.filter(email__iexact=email).exclude(pk=self.user.pk).exists():
            raise forms.ValidationError("Another account already uses this address.")
        return email

    def save(self, commit: bool = True) -> Profile:
        profile = super().save(commit=False)
        profile.user = self.user
        for name in ("first_name", "last_name", "email"):
            setattr(self.user, name, self.cleaned_data[name])
        if commit:
            self.user.save(update_fields=["first_name", "last_name", "email"])
            profile.save()
        return profile
