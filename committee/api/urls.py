from django.urls import path

from committee.api import corrections, discussion, fastlane, forward, publishing, realized, release, views, webhooks

urlpatterns = [
    path("cycles/", views.CycleListView.as_view(), name="api-cycles"),
    path("cycles/<week:week>/", views.CycleDetailView.as_view(), name="api-cycle"),
    path("cycles/<week:week>/close-intake/", views.CycleCloseIntakeView.as_view(), name="api-cycle-close-intake"),
    path("cycles/<week:week>/finalize/", views.CycleFinalizeView.as_view(), name="api-cycle-finalize"),
    path("cycles/<week:week>/ranking/", views.CycleRankingView.as_view(), name="api-cycle-ranking"),
    path("cycles/<week:week>/what-if/", views.CycleWhatIfView.as_view(), name="api-cycle-what-if"),
    path("requests/", views.RequestListView.as_view(), name="api-requests"),
    path("teams/<slug:team>/requests/", views.TeamRequestCreateView.as_view(), name="api-team-requests"),
    path("teams/<slug:team>/windows/", views.TeamWindowListView.as_view(), name="api-team-windows"),
    path("requests/<int:pk>/", views.RequestDetailView.as_view(), name="api-request"),
    path("requests/<int:pk>/submit/", views.RequestSubmitView.as_view(), name="api-request-submit"),
    path("requests/<int:pk>/withdraw/", views.RequestWithdrawView.as_view(), name="api-request-withdraw"),
    path("requests/<int:pk>/scores/", views.RequestScoresView.as_view(), name="api-request-scores"),
    path("requests/<int:pk>/decision/", views.RequestDecisionView.as_view(), name="api-request-decision"),
    path("rubric/", views.RubricView.as_view(), name="api-rubric"),
    path("rubric/versions/", views.RubricVersionsView.as_view(), name="api-rubric-versions"),
]
urlpatterns += [
    path("cycles/<week:week>/publish/", publishing.CyclePublishView.as_view(), name="api-cycle-publish"),
]
urlpatterns += [
    path(
        "requests/<int:pk>/corrections/", corrections.RequestCorrectionsView.as_view(), name="api-request-corrections"
    ),
    path("requests/<int:pk>/release/", release.RequestReleaseView.as_view(), name="api-request-release"),
    path("requests/<int:pk>/extension/", release.RequestExtensionView.as_view(), name="api-request-extension"),
    path("requests/<int:pk>/run-extension/", release.RequestRunExtensionView.as_view(),
         name="api-request-run-extension"),
    path("requests/<int:pk>/outcome/", realized.RequestOutcomeView.as_view(), name="api-request-outcome"),
    path("requests/<int:pk>/appeals/", corrections.RequestAppealsView.as_view(), name="api-request-appeals"),
    path("appeals/<int:pk>/decision/", corrections.AppealDecisionView.as_view(), name="api-appeal-decision"),
]
urlpatterns += [
    path("requests/<int:pk>/comments/", discussion.RequestCommentsView.as_view(), name="api-request-comments"),
    path("requests/<int:pk>/questions/", discussion.RequestQuestionsView.as_view(), name="api-request-questions"),
    path("questions/<int:pk>/answer/", discussion.QuestionAnswerView.as_view(), name="api-question-answer"),
    path("requests/<int:pk>/conflicts/", discussion.RequestConflictsView.as_view(), name="api-request-conflicts"),
    path(
        "requests/<int:pk>/conflicts/withdraw/",
        discussion.RequestConflictWithdrawView.as_view(),
        name="api-request-conflict-withdraw",
    ),
    path("requests/<int:pk>/scores/hold/", discussion.RequestScoresHoldView.as_view(), name="api-request-scores-hold"),
]
urlpatterns += [
    path("webhooks/", webhooks.WebhookListView.as_view(), name="api-webhooks"),
    path("webhooks/<int:pk>/deliveries/", webhooks.WebhookDeliveriesView.as_view(), name="api-webhook-deliveries"),
    path("webhooks/<int:pk>/deactivate/", webhooks.WebhookDeactivateView.as_view(), name="api-webhook-deactivate"),
]
urlpatterns += [
    path("calendar/", forward.ForwardCalendarView.as_view(), name="api-calendar"),
]
urlpatterns += [
    path("teams/<slug:team>/fast-lane/", fastlane.TeamFastLaneView.as_view(), name="api-team-fast-lane"),
]
