# The whole set-up: `make run` serves the demo, `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
# One and a half test processes a core: the tests wait more than they compute (Chromium, slurmctld, gunicorn, a private
# PostgreSQL), so on 2 cores 2 workers kept 1.1 cores busy (7 min 43 s) and 3 finish in 6 min 54 s (docs/benchmarks.md).
WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n + (n + 1) / 2 )))
PYTEST_ARGS ?= -n $(WORKERS) --dist loadfile
# Checks that read the whole tree (mypy, bandit, the catalogue against the sources, the app layers, the locks, the
# configuration docs) run with `make lint`, not `make test`: the tests are behaviour.
LINT_TESTS := tests/lint
# Python keeps the project's bytecode, and pytest its rewritten test modules, in __pycache__ (ignored by git). A machine
# that sets PYTHONDONTWRITEBYTECODE (this one does) would have every test process compile all of them again on every
# run: about 11 s of each worker's collection here.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: run test test-at file-seconds lint audit audit-deps lock messages install install-dev worker beat clean

# First the installer: a new venv holds the pip its Python bundles (23.2.1 with Python 3.11.7), which reads the locks
# differently from the pip that wrote them (it took `fonttools[woff]`, asked for by WeasyPrint, as a second, unpinned
# requirement and refused the whole install). So every install brings the venv's pip to the version locked in
# requirements-pip.txt, hash-checked like the rest, before it reads another lock (docs/maintaining.md).
$(VENV)/.pip: requirements-pip.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-pip.txt
	touch $@

$(VENV)/.installed: $(VENV)/.pip requirements.txt
	$(PY) -m pip install --quiet --require-hashes -r requirements.txt
	touch $@

# LDAP sign-in's packages (requirements-ldap.txt) build against libldap and libsasl: installed when their headers
# are there (apt-get install gcc libldap2-dev libsasl2-dev, as CI does); without them the LDAP tests skip.
# WITH_LDAP=0 leaves them out even where the headers are (CI's run without the optional parts).
WITH_LDAP ?= auto
$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt requirements-ldap.txt
	$(PY) -m pip install --quiet --require-hashes -r requirements-dev.txt
	if [ "$(WITH_LDAP)" != 0 ] && [ -e /usr/include/ldap.h ] && [ -e /usr/include/sasl/sasl.h ]; then \
		$(PY) -m pip install --quiet --require-hashes -r requirements-ldap.txt; \
	else echo "LDAP sign-in and its tests are left out (WITH_LDAP=0, or no LDAP headers: see requirements-ldap.txt)"; fi
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# HOST and PORT reach the settings too: SITE_URL (e-mail links, the commands seed_demo prints) follows them.
run: export HOST := $(HOST)
run: export PORT := $(PORT)
run: install
	DEBUG=$${DEBUG:-1} $(PY) manage.py migrate --no-input
	DEBUG=$${DEBUG:-1} $(PY) manage.py seed_demo
	@echo "Docket is at http://$(HOST):$(PORT)/ (Ctrl-C stops it)"
	DEBUG=$${DEBUG:-1} $(PY) manage.py runserver $(HOST):$(PORT)

test: install-dev
	$(PY) -m pytest $(PYTEST_ARGS) --ignore=$(LINT_TESTS)

# The suite started at another instant of the machine's clock (libfaketime: apt-get install faketime). Tests pin
# their own clock (tests/clock.py); this shows that nothing else, a child process or slurmctld, needs the real day:
#   make test-at AT="2027-01-03 23:59:30"
test-at: install-dev
	@test -n "$(AT)" || { echo 'usage: make test-at AT="YYYY-MM-DD hh:mm:ss" (UTC)'; exit 2; }
	@# One offset for every process (not "@", which restarts the clock in each new process), so the daemons
	@# a test starts (slurmctld, munged, redis-server) agree with it.
	offset=$$(( $$(date -ud "$(AT)" +%s) - $$(date -u +%s) )); \
	case $$offset in -*) shift="$$offset";; *) shift="+$$offset";; esac; \
	TZ=UTC faketime -f "$${shift}s" $(PY) -m pytest $(PYTEST_ARGS) --ignore=$(LINT_TESTS)

# The order of a run without pytest's cache (CI, a new clone): each file's seconds, from the cache of the last
# `make test` here (tests/conftest.py hands the longest files out first). Run after a whole `make test`.
file-seconds:
	$(PY) -c 'import json, pathlib; kept = pathlib.Path("tests/file-seconds.json"); \
	seconds = {**json.loads(kept.read_text()), **json.loads(pathlib.Path(".pytest_cache/v/docket/file-seconds").read_text())}; \
	kept.write_text(json.dumps({name: s for name, s in sorted(seconds.items()) if pathlib.Path(name).exists()}, indent=0) + "\n")'

# ruff, then the whole-tree checks in tests/lint (mypy, bandit against bandit-accepted.toml, the zh-hans catalogue
# against the sources, which needs GNU gettext: apt-get install gettext).
lint: install-dev
	$(PY) -m ruff check .
	$(PY) -m pytest -n 2 -q -p no:cacheprovider $(LINT_TESTS)

# Security checks (docs/security.md): bandit against bandit-accepted.toml, check --deploy and the headers,
# then pip-audit on requirements.txt (needs PyPI's advisory data; says so and passes when it cannot reach it).
PIP_AUDIT_VERSION ?= 2.10.1
AUDIT_VENV ?= /tmp/docket-pip-audit

audit: install-dev audit-deps
	$(PY) -m pytest -q -p no:cacheprovider tests/lint/test_bandit.py tests/test_dependency_audit.py tests/test_deploy_checks.py

audit-deps:
	$(PYTHON) -m venv $(AUDIT_VENV)
	$(AUDIT_VENV)/bin/pip install --quiet pip-audit==$(PIP_AUDIT_VERSION) || echo "pip-audit could not be installed"
	$(PYTHON) .ci/audit_dependencies.py $(AUDIT_VENV)/bin/pip-audit

# The locks: requirements*.txt are written from requirements*.in by pip-tools (in a throwaway venv), every package
# pinned with its hashes, and installed with --require-hashes: a changed or substituted file fails the install.
# Edit the .in file, then `make lock`; `make lock LOCK_ARGS=--upgrade` takes the newest of what the .in files allow.
PIP_TOOLS_VERSION ?= 7.6.2
LOCK_VENV ?= /tmp/docket-pip-tools
LOCK_ARGS ?=
PIP_COMPILE = $(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
	--no-emit-index-url --no-emit-find-links --no-emit-trusted-host $(LOCK_ARGS)

lock:
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install --quiet --require-hashes -r requirements-pip.txt
	$(LOCK_VENV)/bin/pip install --quiet pip-tools==$(PIP_TOOLS_VERSION)
	$(PIP_COMPILE) --output-file requirements-pip.txt requirements-pip.in
	$(PIP_COMPILE) --output-file requirements.txt requirements.in
	$(PIP_COMPILE) --output-file requirements-dev.txt requirements-dev.in
	$(PIP_COMPILE) --output-file requirements-ldap.txt requirements-ldap.in

# The translations (docs/maintaining.md, "Add or change a string"): collect every marked string into
# locale/<lang>/LC_MESSAGES/django.po, then, once translated, compile the .mo that is committed beside it, so
# `make run` needs no GNU gettext. Both steps need it: apt-get install gettext. The ignores are those
# tests/test_templates_i18n.py uses to check that the catalogue is complete.
MESSAGES_IGNORE := --ignore=.venv --ignore=tests --ignore=bench --ignore=staticfiles --ignore=media --ignore=node_modules \
	--ignore=scheduler

messages: install
	DEBUG=1 $(PY) manage.py makemessages -l zh_Hans --no-obsolete $(MESSAGES_IGNORE)
	DEBUG=1 $(PY) manage.py compilemessages -l zh_Hans $(MESSAGES_IGNORE)

worker: install
	$(VENV)/bin/celery -A config worker --loglevel=info

beat: install
	$(VENV)/bin/celery -A config beat --loglevel=info

clean:
	rm -rf $(VENV) db.sqlite3 staticfiles
