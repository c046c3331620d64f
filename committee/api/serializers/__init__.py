"""Serializers of the committee API: explicit fields only, one module per part of the API.

Output serializers describe what a reader sees. Input serializers (`*InputSerializer`) list the
only fields a client may send: status, team, cycle, totals, ranks and authorship are set by the
services, never by a client. `cycles`: the rubric and the weeks; `requests`: requests and their evidence;
`review`: scores, decisions, the ranking and the what-if.
"""

from committee.api.serializers.cycles import (
    CycleDetailSerializer,
    CycleListSerializer,
    CycleSerializer,
    GuidanceSerializer,
    PoolCapacitySerializer,
    RubricChangeInputSerializer,
    RubricChangeSerializer,
    RubricVersionSerializer,
    WeightsSerializer,
)
from committee.api.serializers.requests import (
    AlternativeInputSerializer,
    AlternativeSerializer,
    DecisionSerializer,
    ImpactForecastInputSerializer,
    ImpactForecastSerializer,
    PlacedWindowSerializer,
    PlacementSerializer,
    RequestInputSerializer,
    RequestSerializer,
    TeamWindowQuerySerializer,
    UsageReportInputSerializer,
    UsageReportSerializer,
    placed_window_data,
    placement_data,
)
from committee.api.serializers.review import (
    CriterionResultSerializer,
    DecisionInputSerializer,
    RankingRowSerializer,
    ScoreInputSerializer,
    ScoreSerializer,
    StaleChangeSerializer,
    SuggestionSerializer,
    WhatIfRowSerializer,
    WhatIfSerializer,
)

__all__ = [
    "AlternativeInputSerializer",
    "AlternativeSerializer",
    "CriterionResultSerializer",
    "CycleDetailSerializer",
    "CycleListSerializer",
    "CycleSerializer",
    "DecisionInputSerializer",
    "DecisionSerializer",
    "GuidanceSerializer",
    "ImpactForecastInputSerializer",
    "ImpactForecastSerializer",
    "PlacedWindowSerializer",
    "PlacementSerializer",
    "PoolCapacitySerializer",
    "RankingRowSerializer",
    "RequestInputSerializer",
    "RequestSerializer",
    "RubricChangeInputSerializer",
    "RubricChangeSerializer",
    "RubricVersionSerializer",
    "ScoreInputSerializer",
    "ScoreSerializer",
    "StaleChangeSerializer",
    "SuggestionSerializer",
    "TeamWindowQuerySerializer",
    "UsageReportInputSerializer",
    "UsageReportSerializer",
    "WeightsSerializer",
    "WhatIfRowSerializer",
    "WhatIfSerializer",
    "placed_window_data",
    "placement_data",
]
