"""URLs of the core app: the home page and the accounts pages (mounted at /accounts/)."""

from django.contrib.auth import views as auth_views
from django.urls import path

from . import views

urlpatterns = [
    path("register/", views.register, name="register"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password-reset/", views.PasswordResetView.as_view(), name="password_reset"),
    path("confirm/<str:token>/", views.confirm_email, name="confirm-email"),
    path("confirm-again/", views.resend_confirmation, name="confirm-email-again"),
    path("password-reset/sent/", auth_views.PasswordResetDoneView.as_view(),
         name="password_reset_done"),
    path("reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(),
         name="password_reset_confirm"),
    path("reset/done/", auth_views.PasswordResetCompleteView.as_view(),
         name="password_reset_complete"),
    path("password-change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("password-change/done/", auth_views.PasswordChangeDoneView.as_view(),
         name="password_change_done"),
    path("profile/", views.profile, name="profile"),
    path("token/", views.api_token, name="api-token"),
    path("token/create/", views.api_token_create, name="api-token-create"),
    path("token/revoke/", views.api_token_revoke, name="api-token-revoke"),
]
