"""URLs of the annotation pages, mounted under /annotate/."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.index, name="annotate-index"),
    path("next/", views.next_task, name="annotate-next"),
    # Keyed by the HIT's random url_key: /annotate/hit/1/ and the like find nothing.
    path("hit/<slug:key>/", views.hit_task, name="annotate-hit"),
    path("hit/<slug:key>/answers/", views.hit_answers, name="annotate-answers"),
    path("try/<str:kind>/", views.try_task, name="annotate-try"),
]
