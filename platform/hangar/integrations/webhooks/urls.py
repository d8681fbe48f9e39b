from django.urls import path

from hangar.integrations.webhooks import views

ORG = "orgs/<slug:org>/webhooks/"

urlpatterns = [
    path(ORG + "triggers/", views.TriggerListCreateView.as_view(), name="webhook-triggers"),
    path(ORG + "triggers/<int:trigger_id>", views.TriggerDetailView.as_view(), name="webhook-trigger"),
    path(ORG + "endpoints/", views.EndpointListCreateView.as_view(), name="webhook-endpoints"),
    path(ORG + "endpoints/<int:endpoint_id>", views.EndpointDetailView.as_view(), name="webhook-endpoint"),
    path(ORG + "deliveries/", views.DeliveryListView.as_view(), name="webhook-deliveries"),
    path(ORG + "deliveries/<int:delivery_id>", views.DeliveryDetailView.as_view(), name="webhook-delivery"),
    path(
        ORG + "deliveries/<int:delivery_id>/replay",
        views.DeliveryReplayView.as_view(),
        name="webhook-delivery-replay",
    ),
]

inbound_urlpatterns = [path("in/<str:key>", views.InboundView.as_view(), name="webhook-inbound")]
