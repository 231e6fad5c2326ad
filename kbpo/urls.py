"""Top-level URL configuration."""

from csp.decorators import csp_update
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from kbpo.core import errors, sentences, views

SWAGGER_CDN = "https://cdn.jsdelivr.net"

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
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The API viewer loads Swagger UI from its CDN and styles itself inline.
    path("api/docs/", csp_update({"script-src": [SWAGGER_CDN], "style-src": [SWAGGER_CDN,
                                                                     "'unsafe-inline'"],
                                  "img-src": [SWAGGER_CDN]})(
        SpectacularSwaggerView.as_view(url_name="api-schema")), name="api-docs"),
]

# JSON under /api/ (what a script parses), Django's pages elsewhere: kbpo/core/errors.py.
handler400 = errors.bad_request
handler403 = errors.permission_denied
handler404 = errors.page_not_found
handler500 = errors.server_error
