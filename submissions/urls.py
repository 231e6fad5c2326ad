"""Submission pages and API routes."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from . import api, views

router = SimpleRouter()
router.register("submissions", api.SubmissionViewSet, basename="api-submission")

urlpatterns = [
    path("submissions/", views.submission_list, name="submission-list"),
    path("submissions/new/", views.submission_new, name="submission-new"),
    path("submissions/format/", views.format_help, name="submission-format"),
    path("submissions/<int:pk>/", views.submission_detail, name="submission-detail"),
    path("submissions/<int:pk>/status.json", views.submission_status,
         name="submission-status"),
    path("submissions/<int:pk>/report.tsv", views.submission_report, {"fmt": "tsv"},
         name="submission-report-tsv"),
    path("submissions/<int:pk>/report.json", views.submission_report, {"fmt": "json"},
         name="submission-report-json"),
    path("submissions/<int:pk>/dropped.tsv", views.submission_dropped,
         name="submission-dropped-tsv"),
    path("submissions/<int:pk>/file/", views.submission_file, name="submission-file"),
    path("submissions/<int:pk>/withdraw/", views.submission_withdraw,
         name="submission-withdraw"),
    path("api/", include(router.urls)),
]
