"""URLs of the annotation pages, mounted under /annotate/."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.index, name="annotate-index"),
    path("next/", views.next_task, name="annotate-next"),
    path("hit/<int:hit_id>/", views.hit_task, name="annotate-hit"),
    path("hit/<int:hit_id>/answers/", views.hit_answers, name="annotate-answers"),
    path("try/<str:kind>/", views.try_task, name="annotate-try"),
]
