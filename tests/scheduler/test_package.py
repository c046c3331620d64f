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
