# The README's two commands: `make serve` and `make test`. Both build .venv from nothing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv serve test protos bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[cpu,dev]'
	touch $(STAMP)

venv: $(STAMP)

serve: $(STAMP)
	$(VENV)/bin/vecgrid serve $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -q $(ARGS)

protos: $(STAMP)
	$(PY) scripts/gen_protos.py

bench: $(STAMP)
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b --quick || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
