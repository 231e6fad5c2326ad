# The two commands a newcomer needs:  make demo  and  make test
# (both create the virtualenv and install what they need first).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000

.PHONY: demo test lint bench clean
# The estimators' loops, compiled ahead of time (estimation/core/build_kernels.py).
KERNELS := estimation/core/.kernels-built

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

$(KERNELS): estimation/core/kernels.py estimation/core/build_kernels.py $(VENV)/.installed
	$(PY) -m estimation.core.build_kernels
	touch $@

demo: $(VENV)/.installed $(KERNELS)
	$(PY) manage.py demo --out demo
	$(PY) manage.py serve_demo 127.0.0.1:$(PORT)

test: $(VENV)/.installed $(KERNELS)
	bash scripts/test.sh

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-logo

bench: $(VENV)/.installed $(KERNELS)
	bash scripts/bench.sh

clean:
	rm -rf $(VENV) demo db.sqlite3 var staticfiles test-artifacts $(KERNELS) \
		estimation/core/_kernels_aot.*
