"""Docket's scheduler side: the programs that run next to a scheduler and talk to Docket over its API only.

`docket-slurm-sync` and `docket-kueue-sync` make a scheduler hold the published windows; `docket-slurm-usage` and
`docket-prometheus-usage` post what was measured. Standard library only (Python 3.11+); PyYAML (the `kueue` extra)
only to read a YAML kubeconfig or print Kueue objects as YAML. The version is the version of Docket's API it
speaks (config/settings.py, SPECTACULAR_SETTINGS["VERSION"]): tests/scheduler/test_package.py holds them equal.
"""

__version__ = "1.3.1"
