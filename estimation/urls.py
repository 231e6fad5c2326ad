"""Leaderboard pages and API, and the per-submission evaluation report."""

from django.urls import path

from . import api_reports, compare_views, dashboard, views

urlpatterns = [
    path("leaderboard/", views.leaderboard_index, name="leaderboard-index"),
    path("leaderboard/<slug:tag>/", views.leaderboard_page, name="leaderboard"),
    path("leaderboard/<slug:tag>/leaderboard.csv", views.leaderboard_csv,
         name="leaderboard-csv"),
    path("api/leaderboard/<slug:tag>/", views.LeaderboardAPIView.as_view(),
         name="api-leaderboard"),
    path("submissions/<int:pk>/report/", views.submission_evaluation,
         name="submission-evaluation"),
    path("submissions/<int:pk>/report/progress.json", views.submission_evaluation_progress,
         name="submission-evaluation-progress"),
    path("submissions/<int:pk>/report/predicates.csv", views.submission_predicates_csv,
         name="submission-predicates-csv"),
    path("operator/", dashboard.operator_dashboard, name="operator-dashboard"),
    path("leaderboard/<slug:tag>/compare/", compare_views.compare_page, name="compare"),
    path("api/compare/<slug:tag>/", compare_views.CompareAPIView.as_view(), name="api-compare"),
    path("api/submissions/<int:pk>/scores/", api_reports.ScoresAPIView.as_view(),
         name="api-submission-scores"),
    path("api/submissions/<int:pk>/history/", api_reports.HistoryAPIView.as_view(),
         name="api-submission-history"),
    path("api/submissions/<int:pk>/samples/", api_reports.SamplesAPIView.as_view(),
         name="api-submission-samples"),
    path("api/submissions/<int:pk>/progress/", api_reports.ProgressAPIView.as_view(),
         name="api-submission-progress"),
]
