"""The policy lab, mounted at /policy/."""

from django.urls import URLPattern, URLResolver, path

from policy.views import proposals
from policy.views import replay as replay_views

app_name = "policy"

urlpatterns: list[URLPattern | URLResolver] = [
    path("", proposals.board, name="board"),
    path("new/", proposals.proposal_new, name="proposal-new"),
    path("<int:pk>/", proposals.proposal_detail, name="proposal"),
    path("<int:pk>/<slug:action>/", proposals.proposal_act, name="proposal-act"),
]

# The replay of past weeks (policy/views/replay.py). Before the proposals' <int:pk> paths is not needed: "replay"
# is not a number.
urlpatterns += [
    path("replay/", replay_views.replay_page, name="replay"),
    path("replay/partial/", replay_views.replay_partial, name="replay-partial"),
]
