from django.urls import path

from committee.views import (
    budgets,
    clock,
    corrections,
    discussion,
    elastic,
    emergency,
    fastlane,
    grid,
    inbox,
    portal,
    profile,
    publishing,
    realized,
    release,
    review,
    rubric,
    webhooks,
)

app_name = "committee"

urlpatterns = [
    path("requests/", portal.portal, name="portal"),
    path("requests/new/", portal.request_create, name="request-create"),
    path("requests/new/usage/", portal.request_usage_prefill, name="request-usage-prefill"),
    path("requests/new/hint/", portal.request_filing_hint, name="request-filing-hint"),
    path("requests/<int:pk>/", portal.request_detail, name="request-detail"),
    path("requests/<int:pk>/edit/", portal.request_edit, name="request-edit"),
    path("requests/<int:pk>/submit/", portal.request_submit, name="request-submit"),
    path("requests/<int:pk>/withdraw/", portal.request_withdraw, name="request-withdraw"),
    path("requests/<int:pk>/carry/", portal.request_carry, name="request-carry"),
    path("requests/<int:pk>/run/explain/", portal.request_run_explain, name="request-run-explain"),
    path("requests/<int:pk>/run/extend/", portal.request_run_extend, name="request-run-extend"),
    path("requests/<int:pk>/return/", portal.request_return, name="request-return"),
    path("requests/<int:pk>/outcome/", realized.request_outcome, name="request-outcome"),
    path("teams/<slug:slug>/filing/", portal.team_filing, name="team-filing"),
]

# The weekly review and the rubric.
urlpatterns += [
    path("review/", review.review_home, name="review"),
    path("review/<week:week>/", review.review_cycle, name="review-cycle"),
    path("review/<week:week>/ranking/", review.review_ranking, name="review-ranking"),
    path("review/<week:week>/placement/<slug:cluster>/<slug:pool>/", review.review_placement_pool,
         name="review-placement-pool"),
    path("review/<week:week>/requests/<int:pk>/score/", review.score_save, name="review-score"),
    path("review/<week:week>/requests/<int:pk>/decision/", review.decision_save, name="review-decision"),
    path("review/<week:week>/runs/<int:pk>/continuation/", review.run_continuation_decide,
         name="review-run-continuation"),
    path("review/<week:week>/close-intake/", review.cycle_close_intake, name="cycle-close-intake"),
    path("review/open-next-week/", review.cycle_open_following, name="cycle-open-following"),
    path("review/clock/", clock.clock_status, name="clock-status"),
    path("review/<week:week>/finalize/", review.cycle_finalize, name="cycle-finalize"),
    path("review/<week:week>/what-if/", review.what_if, name="review-what-if"),
    path("rubric/", rubric.rubric_page, name="rubric"),
    path("rubric/change/", rubric.rubric_change, name="rubric-change"),
    path("rubric/policy-history/", rubric.policy_history_page, name="policy-history"),
    path("elastic/", elastic.elastic_policy_page, name="elastic-policy"),
    path("budgets/", budgets.budgets_page, name="budgets"),
    path("elastic/change/", elastic.elastic_policy_change, name="elastic-policy-change"),
]

# A member's queue and the scores grid (committee/views/grid.py).
urlpatterns += [
    path("review/<week:week>/grid/", grid.review_grid, name="review-grid"),
    path("review/<week:week>/grid/cell/", grid.grid_cell_save, name="review-grid-cell"),
    path("review/<week:week>/queue/<int:pk>/", grid.queue_request, name="review-queue"),
    path("review/<week:week>/requests/<int:pk>/evidence/", grid.request_evidence, name="review-evidence"),
]

# Publishing the allocation.
urlpatterns += [path("review/<week:week>/publish/", publishing.cycle_publish, name="cycle-publish")]

# Corrections and appeals, after a week is finalized.
urlpatterns += [
    path("requests/<int:pk>/correct/", corrections.decision_correct, name="request-correct"),
    path("requests/<int:pk>/release/", release.window_release, name="request-release"),
    path("requests/<int:pk>/extension/", release.grant_extension, name="request-extension"),
    path("requests/<int:pk>/appeal/", corrections.appeal_file, name="request-appeal"),
    path("appeals/<int:pk>/decide/", corrections.appeal_decide, name="appeal-decide"),
    path("review/<week:week>/appeals/", corrections.appeal_list, name="appeal-list"),
]

# A person's profile: their notification settings and API tokens.
urlpatterns += [
    path("profile/", profile.profile, name="profile"),
    path("webhooks/", webhooks.webhook_list, name="webhooks"),
    path("webhooks/<int:pk>/deactivate/", webhooks.webhook_deactivate, name="webhook-deactivate"),
    path("inbox/", inbox.inbox, name="inbox"),
    path("inbox/read/", inbox.inbox_mark_read, name="inbox-read"),
    path("profile/tokens/revoke-all/", profile.tokens_revoke_all, name="profile-tokens-revoke-all"),
]

# Out-of-cycle emergency requests.
urlpatterns += [
    path("emergencies/", emergency.emergency_list, name="emergency-list"),
    path("emergencies/new/", emergency.emergency_create, name="emergency-create"),
    path("emergencies/<int:pk>/", emergency.emergency_detail, name="emergency-detail"),
    path("emergencies/<int:pk>/decide/", emergency.emergency_decide, name="emergency-decide"),
    path("emergencies/<int:pk>/review/", emergency.emergency_review, name="emergency-review"),
]

# The fast lane: small requests of the running week, granted on submission (docs/fast-lane.md).
urlpatterns += [
    path("fast-lane/new/", fastlane.fast_lane_create, name="fast-lane-create"),
    path("fast-lane/<int:pk>/revoke/", fastlane.fast_lane_revoke, name="fast-lane-revoke"),
]

# The conversation around a request: committee comments, questions to the team, stale scores, conflicts.
urlpatterns += [
    path("review/<week:week>/requests/<int:pk>/comment/", discussion.comment_add, name="review-comment"),
    path("review/<week:week>/requests/<int:pk>/question/", discussion.question_ask, name="review-question"),
    path("review/<week:week>/requests/<int:pk>/scores-hold/", discussion.scores_confirm, name="review-scores-confirm"),
    path("review/<week:week>/requests/<int:pk>/conflict/", discussion.conflict_declare, name="review-conflict"),
    path("review/<week:week>/requests/<int:pk>/conflict/withdraw/", discussion.conflict_withdraw,
         name="review-conflict-withdraw"),
    path("review/<week:week>/requests/<int:pk>/conflict/waive/", discussion.conflict_waive,
         name="review-conflict-waive"),
    path("review/<week:week>/requests/<int:pk>/conflict/waive/withdraw/", discussion.conflict_waiver_withdraw,
         name="review-conflict-waiver-withdraw"),
    path("requests/questions/<int:pk>/answer/", discussion.question_answer, name="request-question-answer"),
]
