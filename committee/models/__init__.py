"""People and the weekly process: memberships, seats, review cycles and GPU requests."""

from committee.models.clock import ClockRun
from committee.models.corrections import (
    Appeal,
    AppealStatus,
    DecisionCorrection,
)
from committee.models.cycles import (
    Criterion,
    CycleStatus,
    ReviewCycle,
    criterion_label,
)
from committee.models.discussion import (
    ConflictDeclaration,
    ConflictWaiver,
    QuestionStatus,
    RequestComment,
    RequestQuestion,
    ScoreStaleness,
)
from committee.models.emergency import (
    EmergencyApproval,
    EmergencyRequest,
    EmergencyStatus,
    PostHocOutcome,
)
from committee.models.events import (
    DeliveryState,
    LifecycleEvent,
    LifecycleEventType,
    WebhookAttempt,
    WebhookDelivery,
    WebhookSubscription,
)
from committee.models.fastlane import (
    FastLaneCheck,
    FastLaneRequest,
    FastLaneStatus,
)
from committee.models.notifications import (
    Notification,
    NotificationDigest,
    NotificationKind,
    NotificationOptOut,
)
from committee.models.outbox import (
    OutboxMessage,
)
from committee.models.people import (
    CommitteeSeat,
    CommitteeSeatQuerySet,
    GrantSource,
    MembershipRole,
    ReportingLine,
    SeatRole,
    SsoGroupMapping,
    TeamFiling,
    TeamMembership,
)
from committee.models.realized import RealizedOutcome
from committee.models.requests import (
    AddHours,
    Alternative,
    Confidence,
    GpuRequest,
    ImpactForecast,
    ImpactKind,
    RequestEvent,
    RequestPoolOption,
    RequestStatus,
    UsageReport,
)
from committee.models.review import (
    PLACING_OUTCOMES,
    Decision,
    DecisionOutcome,
    FairShareSnapshot,
    Score,
)
from committee.models.tokens import (
    PersonalToken,
)

__all__ = [
    "PLACING_OUTCOMES",
    "AddHours",
    "Alternative",
    "Appeal",
    "AppealStatus",
    "ClockRun",
    "CommitteeSeat",
    "CommitteeSeatQuerySet",
    "Confidence",
    "ConflictDeclaration",
    "ConflictWaiver",
    "Criterion",
    "CycleStatus",
    "Decision",
    "DecisionCorrection",
    "DecisionOutcome",
    "DeliveryState",
    "EmergencyApproval",
    "EmergencyRequest",
    "EmergencyStatus",
    "FairShareSnapshot",
    "FastLaneCheck",
    "FastLaneRequest",
    "FastLaneStatus",
    "GpuRequest",
    "GrantSource",
    "ImpactForecast",
    "ImpactKind",
    "LifecycleEvent",
    "LifecycleEventType",
    "MembershipRole",
    "Notification",
    "NotificationDigest",
    "NotificationKind",
    "NotificationOptOut",
    "OutboxMessage",
    "PersonalToken",
    "PostHocOutcome",
    "QuestionStatus",
    "RealizedOutcome",
    "ReportingLine",
    "RequestComment",
    "RequestEvent",
    "RequestPoolOption",
    "RequestQuestion",
    "RequestStatus",
    "ReviewCycle",
    "Score",
    "ScoreStaleness",
    "SeatRole",
    "SsoGroupMapping",
    "TeamFiling",
    "TeamMembership",
    "UsageReport",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookSubscription",
    "criterion_label",
]
