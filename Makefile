# The whole set-up: `make run` serves the demo, `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?= -n auto --dist loadfile

.PHONY: run test lint install install-dev worker beat clean

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

run: install
	DEBUG=$${DEBUG:-1} $(PY) manage.py migrate --no-input
	DEBUG=$${DEBUG:-1} $(PY) manage.py seed_demo
	@echo "Docket is at http://$(HOST):$(PORT)/ (Ctrl-C stops it)"
	DEBUG=$${DEBUG:-1} $(PY) manage.py runserver $(HOST):$(PORT)

test: install-dev
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install-dev
	$(PY) -m ruff check .

worker: install
	$(VENV)/bin/celery -A config worker --loglevel=info

beat: install
	$(VENV)/bin/celery -A config beat --loglevel=info

clean:
	rm -rf $(VENV) db.sqlite3 staticfiles
