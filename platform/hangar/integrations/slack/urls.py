from django.urls import path

from hangar.integrations.slack import views

urlpatterns = [
    path("events", views.slack_events, name="slack-events"),
    path("install", views.slack_install, name="slack-install"),
    path("oauth", views.slack_oauth, name="slack-oauth"),
    path("link", views.slack_link, name="slack-link"),
]
