"""The locks: every package pinned with its hashes, and in step with the pins a person edits.

requirements*.in hold the packages Docket asks for; `make lock` (pip-tools) writes requirements*.txt with every
package they pull in, each with the hashes of its files, and `make run`, `make test`, CI and the image install them
with --require-hashes. A pin changed in an .in file without `make lock` fails here, not at someone's install.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOCKS = ("requirements", "requirements-dev", "requirements-ldap")
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


def test_every_install_checks_the_hashes():
    makefile = (ROOT / "Makefile").read_text()
    installs = [line.strip() for line in makefile.splitlines() if "pip install" in line and "-r requirements" in line]
    assert len(installs) == 3 and all("--require-hashes" in line for line in installs), installs
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install --require-hashes -r requirements.txt -r requirements-ldap.txt" in dockerfile
