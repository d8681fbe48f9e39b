from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from hangar import webapp
from hangar.accounts.admin_login import throttled_admin_login

urlpatterns = [
    # Before the admin's own URLs: its login page shares the API login's throttle.
    path("admin/login/", throttled_admin_login, name="admin-login"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/", include("hangar.api.urls")),
    path("api/", include("hangar.integrations.webhooks.urls")),
    # Inbound integrations, authenticated by their own signatures (Standard Webhooks, Slack).
    path("hooks/", include("hangar.integrations.webhooks.urls_inbound")),
    path("hooks/slack/", include("hangar.integrations.slack.urls")),
    # OpenCode's HTTP protocol, one base URL per project: /oc/<project-id>/...
    path("oc/<str:project_id>/", include("hangar.opencode.urls")),
    # The web app for every other path (its client-side routes); never the server's own prefixes.
    re_path(r"^(?!api/|oc/|ws/|admin/|static/)(?P<path>.*)$", webapp.index, name="webapp"),
]
