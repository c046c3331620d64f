"""The decision archive, mounted at /archive/."""

from django.urls import path

from reports import views

app_name = "reports"

urlpatterns = [
    path("", views.index, name="index"),
    path("search/", views.search, name="search"),
    path("chain/", views.chain, name="chain"),
    path("new/", views.page_create, name="page-create"),
    path("exports/<int:pk>/", views.export_detail, name="export"),
    path("exports/<int:pk>/progress/", views.export_progress, name="export-progress"),
    path("exports/<int:pk>/download/", views.export_download, name="export-download"),
    path("<slug:slug>/", views.page_detail, name="page"),
    path("<slug:slug>/edit/", views.page_edit, name="page-edit"),
    path("<slug:slug>/history/", views.history, name="history"),
    path("<slug:slug>/compare/", views.compare, name="compare"),
    path("<slug:slug>/revisions/<int:number>/", views.revision_detail, name="revision"),
    path("<slug:slug>/revisions/<int:number>/restore/", views.revision_restore, name="revision-restore"),
    path("<slug:slug>/revisions/<int:number>/pdf/", views.revision_pdf, name="revision-pdf"),
]
