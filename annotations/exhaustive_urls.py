"""URLs of the exhaustive-annotation operator pages."""

from django.urls import path

from . import exhaustive_views

urlpatterns = [
    path("<slug:tag>/", exhaustive_views.exhaustive_progress, name="exhaustive-progress"),
]
