"""The elastic pool (docs/elastic.md): idle grants offered to preemptible work, bursts promoted, nights opened.

`evaluate` (pure) turns a policy version, a pool's active windows and its measured usage into actions;
`services` records them as `ElasticAction` rows (the hourly task) and versions the policy; `selectors`
read what schedulers and pages show.
"""
