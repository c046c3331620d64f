from django.urls import path

from allocations.api import views

urlpatterns = [
    path("windows/", views.WindowListView.as_view(), name="api-windows"),
    path("windows/sync-status/", views.SyncStatusView.as_view(), name="api-windows-sync-status"),
    path("windows/<int:pk>/", views.WindowDetailView.as_view(), name="api-window"),
    path("usage/", views.UsageCreateView.as_view(), name="api-usage"),
    path("clusters/<slug:slug>/", views.ClusterReferenceView.as_view(), name="api-cluster"),
    path("pools/", views.PoolListView.as_view(), name="api-pools"),
    path("elastic/policy/", views.ElasticPolicyView.as_view(), name="api-elastic-policy"),
    path("elastic/actions/", views.AgentActionCreateView.as_view(), name="api-elastic-actions"),
]
