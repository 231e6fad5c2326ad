"""URLs of the exhaustive-annotation operator pages."""

from django.urls import path

from . import views

urlpatterns = [
    path("<slug:tag>/", views.exhaustive_progress, name="exhaustive-progress"),
]
