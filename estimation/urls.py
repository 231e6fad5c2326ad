"""Leaderboard pages and API, and the per-submission evaluation report."""

from django.urls import path

from . import views

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
]
