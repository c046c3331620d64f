"""The policy lab, mounted at /policy/."""

from django.urls import URLPattern, URLResolver, path

from policy.views import replay as replay_views

app_name = "policy"

urlpatterns: list[URLPattern | URLResolver] = []

# The replay of past weeks (policy/views/replay.py).
urlpatterns += [
    path("replay/", replay_views.replay_page, name="replay"),
    path("replay/partial/", replay_views.replay_partial, name="replay-partial"),
]
