"""The scheduler side as one package (scheduler/, `docket-scheduler`): its version is the API's, its programs are
the console scripts its pyproject.toml names, and none of it needs more than Python's standard library.

With DOCKET_SCHEDULER_BIN (CI: the bin folder of a venv without Django where the wheel is installed), the
checks run against that install; else against the source tree (tests/scheduler_programs.py).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib

import pytest
from django.conf import settings

import docket_scheduler
from tests.scheduler_programs import MODULES, ROOT, SCHEDULER_SRC, installed_bin, program, program_env

PYPROJECT = tomllib.loads((ROOT / "scheduler" / "pyproject.toml").read_text())


def test_the_package_speaks_the_apis_version() -> None:
    assert docket_scheduler.__version__ == settings.SPECTACULAR_SETTINGS["VERSION"]
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "docket_scheduler.__version__"}


def test_each_console_script_is_a_programs_main() -> None:
    scripts = PYPROJECT["project"]["scripts"]
    assert set(scripts) == set(MODULES)
    for command, target in scripts.items():
        module, _sep, function = target.partition(":")
        assert module == MODULES[command] and function == "main"
        assert callable(getattr(importlib.import_module(module), function))


def test_the_package_needs_only_the_standard_library() -> None:
    assert PYPROJECT["project"]["dependencies"] == []
    assert PYPROJECT["project"]["optional-dependencies"] == {"kueue": ["PyYAML>=6"]}
    code = (
        "import sys\n"
        f"for name in {sorted(MODULES.values())!r}: __import__(name)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'yaml', 'rest_framework', 'allocations'}))"
    )
    # -I: the interpreter alone, without the repository on the path, as on a scheduler host.
    result = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(SCHEDULER_SRC)!r})\n"
                             + code], capture_output=True, text=True, check=True, timeout=30, cwd="/")
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("command", sorted(MODULES))
def test_each_program_starts_and_names_itself(command: str) -> None:
    result = subprocess.run([*program(command), "--help"], env=program_env({"PATH": "/usr/bin:/bin"}),
                            capture_output=True, text=True, timeout=30, check=False, cwd="/")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {command} ")


def test_the_installed_package_is_the_apis_version() -> None:
    bin_dir = installed_bin()
    if bin_dir is None:
        pytest.skip("DOCKET_SCHEDULER_BIN is not set: the source tree is checked above")
    code = "import importlib.metadata as m, importlib.util as u; print(m.version('docket-scheduler'), " \
           "u.find_spec('django') is None)"
    result = subprocess.run([str(bin_dir / "python"), "-c", code], capture_output=True, text=True, check=True,
                            timeout=30, cwd="/")
    assert result.stdout.split() == [settings.SPECTACULAR_SETTINGS["VERSION"], "True"]


def test_the_slurm_syncs_names_stay_importable_from_slurm_sync() -> None:
    # An operator's script may import the sync's parts from `docket_scheduler.slurm_sync`, where they all lived
    # before the reservations, the QOS quotas and the Slurm tools became modules of their own.
    from docket_scheduler import slurm_commands, slurm_qos, slurm_reservations, slurm_sync

    names = {
        slurm_commands: ["SLURM_NAME", "SLURM_TIME_FORMAT", "NEEDED_ENFORCE", "SlurmConfig", "SlurmError",
                         "parse_config", "parse_fields", "slurm_time"],
        slurm_reservations: ["RESERVATION_PREFIX", "START_SLACK", "Action", "Create", "Delete", "Keep", "Report",
                             "Reservation", "Update", "describe", "nodes_needed", "parse_reservations", "reconcile",
                             "reservation_name", "rounding_note", "window_id_of"],
        slurm_qos: ["PREEMPT_MODES", "QOS_MARK", "QOS_PREFIX", "SCAVENGER_QOS", "TIER_PREEMPTIBLE", "TIER_PRIORITY",
                    "TIER_STANDARD", "AccountQos", "Qos", "QosCommand", "QosSettings", "QuotaDesire", "next_boundary",
                    "parse_assoc", "parse_qos", "quota_description", "quota_desire", "quota_qos_name",
                    "quota_removals_refused", "quota_status", "reconcile_qos"],
    }
    for module, module_names in names.items():
        for name in module_names:
            assert getattr(slurm_sync, name) is getattr(module, name), name
    assert {"SlurmSync", "build_parser", "main"} <= set(slurm_sync.__all__)
    assert set(slurm_sync.__all__) == {name for module_names in names.values() for name in module_names} | {
        "SlurmSync", "build_parser", "main"}


def test_the_kueue_syncs_names_stay_importable_from_kueue_sync() -> None:
    # The Kubernetes API server's half (kubeconfig, credentials, the client) moved to kube_api.
    from docket_scheduler import kube_api, kueue_sync

    for name in ("APPLY_CONTENT_TYPE", "FIELD_MANAGER", "PLURALS", "SERVICE_ACCOUNT_DIR", "USER_AGENT", "KubeClient",
                 "KubeConfig", "KubeError", "describe", "in_cluster_config", "load_kubeconfig", "object_path",
                 "status_message"):
        assert getattr(kueue_sync, name) is getattr(kube_api, name), name
