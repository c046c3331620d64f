"""The policy lab: proposals to change the rules, counterfactual replays of past weeks under them.

It sits between the archive and the weekly process: reports ──> policy ──> committee ──> allocations.
"""
