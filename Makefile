# The README's two commands: `make serve` and `make test`. Both build .venv from nothing.
# `make test` is the suite but the fuzzers and the kill tests (`make fuzz`, `make faults`; .ci/run runs all three,
# then `make chaos-short`);
# `make test-fast` also leaves out the tests marked `slow` (they start processes or clusters) for the
# edit-test loop.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv serve test test-fast fuzz faults chaos chaos-short protos bench clean

# Python's bytecode cache stays on for everything started from here, whatever the shell says: without
# it every process of the suite (and every cluster a test starts) compiles vecgrid and the test modules
# again, which took a sixth of `make test-fast`.
unexport PYTHONDONTWRITEBYTECODE

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[cpu,dev]'
	touch $(STAMP)

venv: $(STAMP)

serve: $(STAMP)
	$(VENV)/bin/vecgrid serve $(ARGS)

# Three pytest workers on two cores, one test module each at a time (module-scoped clusters stay in one
# process): the third fills the others' waits on sockets, timers and started processes (6:04-6:18 against
# 6:54 with two; docs/development.md).  One OpenMP thread per process: workers each spinning a thread per
# core over faiss's small test searches burnt a quarter of the suite's CPU (query nodes still set their
# own faiss_threads).
test: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 3 --dist loadfile -m "not fuzz and not fault" $(ARGS)

# The fast lane: what starts no process and no cluster.
test-fast: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 3 --dist loadfile -m "not slow and not fuzz and not fault" $(ARGS)

# The fuzzers (tests marked `fuzz`: bounded and seeded, a minute or so on two cores), which .ci/run runs
# after make test: the gRPC methods, the REST app's and the conformance app's OpenAPI documents.
fuzz: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 3 --dist loadfile -m fuzz $(ARGS)

# The tests that kill a process mid-operation (tests marked `fault`: kill -9 of the coordinator during a compaction,
# at the write path's crash points, under loaded collections; a stopped scheduler), which .ci/run runs after make test:
# four tests of 30-55 s each, which made make test run past its 8 minutes on a slow host.  One at a time: each
# picks free ports for the processes it starts, and two picking at once lost a port to each other (a scheduler's
# "Address already in use").
faults: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 0 -m fault $(ARGS)

# The fault suite (scripts/chaos.py): a cluster-mode cluster killed and restarted under writes; the final
# read must match every acknowledged write.  chaos-short is the two-fault run .ci/run adds after make test.
chaos: $(STAMP)
	$(PY) scripts/chaos.py $(ARGS)

chaos-short: $(STAMP)
	$(PY) scripts/chaos.py --short $(ARGS)

protos: $(STAMP)
	$(PY) scripts/gen_protos.py

# every benchmark at --quick size (not the *_floor.py servers some of them start, nor the bench/_*.py helpers)
bench: $(STAMP)
	@for b in bench/*.py; do case $$b in *_floor.py|bench/_*) continue;; esac; echo "== $$b"; $(PY) $$b --quick || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
