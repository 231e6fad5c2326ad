"""Top-level URL configuration."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from kbpo.core import errors, sentences, token_api, views

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/", include("kbpo.core.urls")),
    path("admin/", admin.site.urls),
    path("corpora/<slug:tag>/sentences.tsv", sentences.sentences_tsv, name="corpus-sentences-tsv"),
    path("api/corpora/<slug:tag>/sentences/", sentences.CorpusSentencesView.as_view(),
         name="api-corpus-sentences"),
    path("exhaustive/", include("annotations.exhaustive.urls")),
    path("annotate/", include("annotations.interfaces.urls")),
    path("", include("submissions.urls")),
    path("", include("estimation.urls")),
    path("api/auth/token/", token_api.TokenLoginView.as_view(), name="api-token-login"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI from our own static files (drf-spectacular-sidecar); the split view
    # serves its start-up script from /api/docs/?script=, so the page needs no inline
    # script and runs under the site's own policy.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"),
         name="api-docs"),
]

# JSON under /api/ (what a script parses), Django's pages elsewhere: kbpo/core/errors.py.
handler400 = errors.bad_request
handler403 = errors.permission_denied
handler404 = errors.page_not_found
handler500 = errors.server_error
