"""The locks: every package pinned with its hashes, and in step with the pins a person edits.

requirements*.in hold the packages Docket asks for; `make lock` (pip-tools) writes requirements*.txt with every
package they pull in, each with the hashes of its files, and `make run`, `make test`, CI and the image install them
with --require-hashes. A pin changed in an .in file without `make lock` fails here, not at someone's install.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.conftest import require

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ("requirements-pip", "requirements", "requirements-dev", "requirements-ldap")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def asked_for(path: Path) -> dict[str, str]:
    """The pins of an .in file and of the .in files it includes with -r."""
    pins: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            pins |= asked_for(path.parent / line[3:].strip())
        elif match := PIN.match(line):
            pins[canonical(match[1])] = match[2]
    return pins


def locked(path: Path) -> dict[str, tuple[str, int]]:
    """name → (version, number of hashes) of a pip-compile output."""
    out: dict[str, tuple[str, int]] = {}
    current = None
    for line in path.read_text().splitlines():
        if match := PIN.match(line):
            current = canonical(match[1])
            out[current] = (match[2], 0)
        elif current and line.strip().startswith("--hash=sha256:"):
            version, hashes = out[current]
            out[current] = (version, hashes + 1)
        elif not line.startswith(" "):
            current = None
    return out


@pytest.mark.parametrize("name", LOCKS)
def test_every_package_of_the_lock_is_pinned_with_its_hashes(name):
    lock = locked(ROOT / f"{name}.txt")
    assert lock, f"{name}.txt has no pins"
    assert [package for package, (_, hashes) in lock.items() if hashes == 0] == []
    requirement_lines = [
        line for line in (ROOT / f"{name}.txt").read_text().splitlines()
        if line and not line.startswith((" ", "#"))
    ]
    assert len(requirement_lines) == len(lock), "a line that is not an exact pin: --require-hashes refuses it"


@pytest.mark.parametrize("name", LOCKS)
def test_the_lock_holds_what_the_in_file_asks_for(name):
    lock = locked(ROOT / f"{name}.txt")
    stale = {
        package: (version, lock.get(package, ("missing",))[0])
        for package, version in asked_for(ROOT / f"{name}.in").items()
        if lock.get(package, ("missing",))[0] != version
    }
    assert stale == {}, f"{name}.in and {name}.txt disagree ({{package: (asked, locked)}}): run `make lock`"


def test_the_shared_packages_have_one_version_in_every_lock():
    runtime = locked(ROOT / "requirements.txt")
    for name in ("requirements-dev", "requirements-ldap"):
        other = locked(ROOT / f"{name}.txt")
        shared = runtime.keys() & other.keys()
        differ = {p: (runtime[p][0], other[p][0]) for p in shared if runtime[p][0] != other[p][0]}
        assert differ == {}, f"{name}.txt pins another version than requirements.txt"


def test_every_install_checks_the_hashes_and_first_brings_the_locked_pip():
    makefile = (ROOT / "Makefile").read_text()
    installs = [line.strip() for line in makefile.splitlines() if "pip install" in line and "-r requirements" in line]
    assert len(installs) == 5 and all("--require-hashes" in line for line in installs), installs
    # The venv is made in one place, which installs the locked pip, and every other lock is installed after it.
    assert makefile.count("$(PYTHON) -m venv $(VENV)") == 1
    assert "$(VENV)/.installed: $(VENV)/.pip requirements.txt" in makefile
    dockerfile = (ROOT / "Dockerfile").read_text()
    pip_first = dockerfile.index("pip install --require-hashes -r requirements-pip.txt")
    assert pip_first < dockerfile.index("pip install --require-hashes -r requirements.txt -r requirements-ldap.txt")


def test_the_lock_of_pip_is_the_pip_installed_here():
    """make install-dev brought this venv's pip from the one its Python bundles to the locked one."""
    assert locked(ROOT / "requirements-pip.txt") == {"pip": (metadata.version("pip"), 2)}


# --- every requirement of a locked package, extras included, is met by the lock alone ----------------------------
# pip reads `fonttools[woff]>=4.59.2` (WeasyPrint's) as fonttools plus the packages of its `woff` extra. A lock that
# pins fonttools but not brotli or zopfli installs only with a pip that looks elsewhere, and an old pip (23.2) took
# the extra as a second, unpinned requirement and refused the install. Read from the installed packages' metadata.


def unmet_requirements(lock: dict[str, tuple[str, int]], asked_extras: dict[str, set[str]]) -> list[str]:
    """Each requirement of a locked package (and of the extras asked of it) that the lock does not pin or pins at a
    version outside the requirement's range, as 'package → requirement'."""
    unmet: list[str] = []
    wanted = {name: set(extras) for name, extras in asked_extras.items()}
    done: set[tuple[str, str]] = set()
    queue = [(name, "") for name in lock] + [(name, extra) for name, extras in wanted.items() for extra in extras]
    while queue:
        name, extra = queue.pop()
        if (name, extra) in done:
            continue
        done.add((name, extra))
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
                continue
            if requirement.marker is None and extra:
                continue  # a base requirement, checked with the package itself
            dependency = canonical(requirement.name)
            version = lock.get(dependency, ("missing",))[0]
            if version == "missing" or not requirement.specifier.contains(version, prereleases=True):
                unmet.append(f"{name}[{extra}] → {line} (locked: {version})" if extra else f"{name} → {line} "
                             f"(locked: {version})")
            queue += [(dependency, wanted_extra) for wanted_extra in requirement.extras]
    return sorted(unmet)


def installed_as_locked(lock: dict[str, tuple[str, int]]) -> dict[str, tuple[str, int]]:
    """The part of a lock installed in this venv at the locked version (the metadata read is that version's)."""
    versions = {canonical(dist.metadata["Name"]): dist.version for dist in metadata.distributions()}
    wrong = {name: (version, versions[name]) for name, (version, _) in lock.items()
             if name in versions and versions[name] != version}
    assert wrong == {}, f"installed at another version than locked (locked, installed): {wrong}; run `make install-dev`"
    return {name: pin for name, pin in lock.items() if name in versions}


@pytest.mark.parametrize(
    ("name", "on_top_of"), [("requirements", None), ("requirements-dev", None), ("requirements-ldap", "requirements")]
)
def test_every_requirement_of_a_locked_package_is_met_by_the_lock_alone(name, on_top_of):
    lock = locked(ROOT / f"{name}.txt") | (locked(ROOT / f"{on_top_of}.txt") if on_top_of else {})
    present = installed_as_locked(lock)
    if name == "requirements-ldap" and "python-ldap" not in present:
        require(False, "python-ldap (requirements-ldap.txt needs libldap2-dev and libsasl2-dev)")
    assert set(lock) - set(present) <= {"pip", "setuptools"}, f"not installed: {set(lock) - set(present)}"
    assert unmet_requirements(present, asked_for_extras(ROOT / f"{name}.in")) == []


def asked_for_extras(path: Path) -> dict[str, set[str]]:
    """package → the extras an .in file (and the ones it includes) asks of it: `celery[redis]==…`."""
    extras: dict[str, set[str]] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            for package, more in asked_for_extras(path.parent / line[3:].strip()).items():
                extras.setdefault(package, set()).update(more)
        elif line and not line.startswith("-"):
            requirement = Requirement(line)
            extras.setdefault(canonical(requirement.name), set()).update(requirement.extras)
    return extras


def test_the_check_finds_an_extra_whose_packages_the_lock_leaves_out():
    """fonttools' `woff` extra needs brotli and zopfli: a lock without zopfli fails the check, naming it."""
    lock = installed_as_locked(locked(ROOT / "requirements.txt"))
    assert "zopfli" in lock and unmet_requirements(lock, {}) == []
    without = {name: pin for name, pin in lock.items() if name != "zopfli"}
    unmet = unmet_requirements(without, {})
    assert unmet and all("fonttools[woff] → zopfli" in line for line in unmet), unmet
