"""The decision archive, mounted at /archive/."""

from django.urls import path

from reports import views
from reports.dashboards import views as dashboard_views
from reports.executive import views as executive_views
from reports.statements import views as statement_views

app_name = "reports"

urlpatterns = [
    path("", views.index, name="index"),
    path("search/", views.search, name="search"),
    path("chain/", views.chain, name="chain"),
    path("new/", views.page_create, name="page-create"),
    path("preview/", views.markdown_preview, name="preview"),
    path("exports/<int:pk>/", views.export_detail, name="export"),
    path("exports/<int:pk>/progress/", views.export_progress, name="export-progress"),
    path("exports/<int:pk>/download/", views.export_download, name="export-download"),
    # Dashboards, the monthly review and capacity planning (before the pages: "dashboards" is a reserved slug).
    path("dashboards/", dashboard_views.dashboards, name="dashboards"),
    path("dashboards/monthly/", dashboard_views.monthly_review, name="monthly-review"),
    path("dashboards/monthly.csv", dashboard_views.monthly_review_csv, name="monthly-review-csv"),
    path("dashboards/monthly/<str:month>/review/", dashboard_views.monthly_review_open, name="monthly-review-open"),
    path("dashboards/capacity/", dashboard_views.capacity_planning, name="capacity-planning"),
    path("dashboards/capacity.csv", dashboard_views.capacity_planning_csv, name="capacity-planning-csv"),
    path("dashboards/capacity.pdf", dashboard_views.capacity_planning_pdf, name="capacity-planning-pdf"),
    path("dashboards/heatmap/", dashboard_views.utilization_heatmap, name="utilization-heatmap"),
    path("dashboards/heatmap.pdf", dashboard_views.utilization_heatmap_pdf, name="utilization-heatmap-pdf"),
    path("dashboards/calendar/", dashboard_views.forward_calendar, name="forward-calendar"),
    path("dashboards/tco/", dashboard_views.tco_calculator, name="tco"),
    path("dashboards/tco.pdf", dashboard_views.tco_calculator_pdf, name="tco-pdf"),
    path("dashboards/elastic/<slug:cluster>/<slug:pool>/", dashboard_views.pool_elastic_history,
         name="pool-elastic-history"),
    path("dashboards/teams/<slug:team>/", dashboard_views.team_history, name="team-history"),
    path("dashboards/<slug:key>.csv", dashboard_views.dashboard_csv, name="dashboard-csv"),
    # The executive summary and the capacity buffer fund ("executive" and "buffer" are reserved slugs).
    path("executive/", executive_views.executive, name="executive"),
    path("executive/<str:month>/", executive_views.executive_summary, name="executive-summary"),
    path("executive/<str:month>/pdf/", executive_views.executive_summary_pdf, name="executive-summary-pdf"),
    path("buffer/", executive_views.buffer_funds, name="buffer-funds"),
    path("buffer/<str:quarter>/", executive_views.buffer_fund, name="buffer-fund"),
    path("buffer/<str:quarter>/open/", executive_views.buffer_fund_open, name="buffer-fund-open"),
    path("buffer/<str:quarter>/spend/", executive_views.buffer_spend_create, name="buffer-spend-create"),
    path("buffer/<str:quarter>/deferred/", executive_views.deferred_purchase_create, name="deferred-purchase-create"),
    path("statements/<str:month>/", statement_views.statement_page, name="statement"),
    path("statements/<str:month>.csv", statement_views.statement_csv, name="statement-csv"),
    path("statements/<str:month>.pdf", statement_views.statement_pdf, name="statement-pdf"),
    path("<slug:slug>/", views.page_detail, name="page"),
    path("<slug:slug>/edit/", views.page_edit, name="page-edit"),
    path("<slug:slug>/history/", views.history, name="history"),
    path("<slug:slug>/compare/", views.compare, name="compare"),
    path("<slug:slug>/revisions/<int:number>/", views.revision_detail, name="revision"),
    path("<slug:slug>/revisions/<int:number>/restore/", views.revision_restore, name="revision-restore"),
    path("<slug:slug>/revisions/<int:number>/pdf/", views.revision_pdf, name="revision-pdf"),
]
