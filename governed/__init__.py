"""The governed parameters: every rule the committee governs, as versioned values with an effective ISO week.

One store for the rubric weights, the score quorum, the fair-share half-life and window, each pool's burst reserve
and cold standby, and the elastic thresholds (`governed.params.PARAMS` declares them: label, type, bounds, unit).
A change (`PolicyChange`: who, when, why, from which week, and where it does not count as the week's one
substantive change, why not) sets one or more values (`PolicyValue`); `governed.selectors.policy_value` answers
"the value of this key in this week" and `policy_values` "all values in force in this week";
`governed.services.policy_change_record` is the one way to write (the policy lab's adoption, `/rubric/`, the
elastic page, commands).

Why an app of its own, beneath allocations: the readers sit in allocations (a pool's reserves, the elastic
thresholds) and in committee (rubric weights, quorum, fair share), and the writers in committee and policy. The
apps depend one way, reports -> policy -> committee -> allocations -> governed -> core
(tests/lint/test_app_layers.py), so the store must sit beneath allocations. It names no pool, criterion or
cycle: keys are strings ("pool.atlas/a100.standby_pct"), and the apps above expand the patterns of PARAMS with
their own pools and criteria.
"""
