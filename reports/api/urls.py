from django.urls import path

from reports.api import views

urlpatterns = [
    path("archive/pages/", views.PageListView.as_view(), name="archive-page-list"),
    path("archive/pages/<slug:slug>/", views.PageDetailView.as_view(), name="archive-page-detail"),
    path("archive/pages/<slug:slug>/revisions/", views.RevisionListView.as_view(), name="archive-revision-list"),
    path(
        "archive/pages/<slug:slug>/revisions/<int:number>/",
        views.RevisionDetailView.as_view(),
        name="archive-revision-detail",
    ),
    path("archive/pages/<slug:slug>/diff/", views.RevisionDiffView.as_view(), name="archive-revision-diff"),
    path("archive/chain/", views.ChainHeadView.as_view(), name="archive-chain-head"),
]
