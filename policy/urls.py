"""The policy lab, mounted at /policy/."""

from django.urls import URLPattern, URLResolver, path

from policy.views import proposals

app_name = "policy"

urlpatterns: list[URLPattern | URLResolver] = [
    path("", proposals.board, name="board"),
    path("new/", proposals.proposal_new, name="proposal-new"),
    path("<int:pk>/", proposals.proposal_detail, name="proposal"),
    path("<int:pk>/<slug:action>/", proposals.proposal_act, name="proposal-act"),
]
