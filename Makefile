# Development and CI entry points. The torch pin keeps installs on the local CPU build;
# pyproject.toml stays permissive for users.
PYTHON ?= python3
VENV ?= .venv
TORCH_PIN ?= torch==2.13.0
BIN := $(VENV)/bin

.PHONY: help venv demo test test-slow test-all test-oracle test-inductor test-fast test-transformers test-guard-models fuzz bench bench-explain bench-startup bench-trace lint record-fixtures record-traces record-torchrun clean

help:  ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'
	@echo "Read on: README.md (a guide), docs/commands.md (every command and option), docs/ (one page per topic)"

$(BIN)/guarddiag: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH_PIN)" numpy
	$(BIN)/pip install -q -e ".[test]"
	@touch $@

venv: $(BIN)/guarddiag  ## Create .venv with pinned torch and guarddiag installed (editable)

demo: venv  ## Diagnose a bundled scenario, then let compare find the config flips that fix it and measure them
	$(BIN)/guarddiag run scenarios/module_int_attribute.py
	$(BIN)/guarddiag compare scenarios/module_int_attribute.py

# The tests are isolated (each in its own tmp_path, nothing written to the checkout or to fixed paths), so
# pytest-xdist runs them on every core; worksteal: a worker that ran out takes tests queued for another, so
# one worker is not left with a tail of slow end-to-end tests. (Runs several tests read are made once, in a
# locked folder every worker shares: tests/shared_runs.py.)
# PYTEST_ARGS adds options, e.g. make test PYTEST_ARGS="-n 4" or PYTEST_ARGS="-k oracle".
XDIST ?= -n auto --dist worksteal

# compileall first: where PYTHONDONTWRITEBYTECODE is set (CI here), every guarddiag process would compile
# guarddiag's sources again, 0.3 s of CPU each, and the suite starts several hundred of them.
test: venv  ## The suite CI runs: every unit and hygiene test, and end to end on real torch each command's paths and errors (make test-slow, test-oracle and test-inductor run the breadth); about 6 min on 2 cores in a clean clone, venv included (about 4 min of pytest)
	$(BIN)/python -m compileall -q guarddiag
	$(BIN)/python -m pytest -q $(XDIST) -m "not inductor and not oracle and not slow and not guard_models" --durations=15 $(PYTEST_ARGS)

test-slow: venv  ## The end-to-end breadth make test leaves out: every scenario, corpus script and hint, torchrun jobs, timeouts and signals, every format (about 22 min on 2 cores; run before an issue is resolved)
	$(BIN)/python -m compileall -q guarddiag
	$(BIN)/python -m pytest -q $(XDIST) -m "slow and not inductor" --durations=15 $(PYTEST_ARGS)

test-all: venv  ## Everything but the inductor corpus: make test, test-slow and test-oracle in one run (about 33 min on 2 cores)
	$(BIN)/python -m compileall -q guarddiag
	$(BIN)/python -m pytest -q $(XDIST) -m "not inductor and not guard_models" --durations=15 $(PYTEST_ARGS)

test-oracle: venv  ## Every port of PyTorch's recompile tests, guarddiag's counts against torch's (make test runs a sample of 3; about 4 min on 2 cores)
	$(BIN)/python -m compileall -q guarddiag
	$(BIN)/python -m pytest -q $(XDIST) tests/realtorch/test_pytorch_oracle.py --durations=5 $(PYTEST_ARGS)

test-inductor: venv  ## The corpus on the inductor backend it is written for: counts against torch's, every fix hint applied (about 15 min on 2 cores; make test-slow runs the same on eager)
	$(BIN)/python -m compileall -q guarddiag
	$(BIN)/python -m pytest -q $(XDIST) -m inductor --durations=15 $(PYTEST_ARGS)

test-fast: venv  ## Unit tests (no torch, enforced): parsers, model, gate, renderers on recorded logs (about 1 min on 2 cores)
	$(BIN)/python -m compileall -q guarddiag
	$(BIN)/python -m pytest -q $(XDIST) tests/unit $(PYTEST_ARGS)

test-transformers: venv  ## The transformers GPT-2 corpus script (installs the pinned transformers, about a minute; not part of make test)
	$(BIN)/pip install -q -e ".[test,corpus]"
	$(BIN)/python -m pytest -q tests/e2e/run/test_corpus.py -k hf_gpt2

test-guard-models: venv  ## Guard cost on real models: the 1,024-block bench model, transformers GPT-2 and Llama under generate(), the suggested guard filter applied by compare (installs the pinned transformers; about 3 min on 2 cores; run before an issue on guards is resolved)
	$(BIN)/pip install -q -e ".[test,corpus]"
	$(BIN)/python -m pytest -q -m guard_models --durations=5 $(PYTEST_ARGS)

fuzz: venv  ## Long property-based run of the parser (10,000 examples per property); appends to bench/fuzz-results.txt
	HYPOTHESIS_PROFILE=long $(BIN)/python -m pytest -q -p no:cacheprovider --hypothesis-show-statistics tests/unit/logparse/test_fuzz.py > /tmp/guarddiag-fuzz.txt; \
	status=$$?; \
	{ printf '\n## %s torch=%s commit=%s\n' "$$(date -u +%FT%TZ)" "$$($(BIN)/python -c 'import torch; print(torch.__version__)')" "$$(git rev-parse --short HEAD)"; \
	  grep -E '^tests/|passing|Stopped|passed|failed' /tmp/guarddiag-fuzz.txt; } >> bench/fuzz-results.txt; \
	tail -20 bench/fuzz-results.txt; exit $$status

bench: venv  ## Benchmarks of issue 7 (parse, tlparse, run overhead, compare); appends to bench/results.md
	$(BIN)/pip install -q -e ".[bench]"
	test -f bench/data/model.log || $(BIN)/python bench/make_model_log.py
	# Measure guarddiag as pip installs it: byte-compiled (PYTHONDONTWRITEBYTECODE may be set here).
	$(BIN)/python -m compileall -q guarddiag
	$(BIN)/python bench/run_bench.py $(BENCH_ARGS)

bench-explain: venv  ## explain scaling over model size (issue 18); appends to bench/results.md
	$(BIN)/python bench/make_explain_logs.py
	$(BIN)/python -m compileall -q guarddiag
	$(BIN)/python bench/explain_scaling.py $(BENCH_ARGS)

bench-startup: venv  ## Start-up of `guarddiag version` and `parse` (wall, CPU, imports; median of 21, issue 12); appends to bench/results.md
	$(BIN)/python -m compileall -q guarddiag
	$(BIN)/python bench/startup.py $(BENCH_ARGS)

bench-trace: venv  ## guarddiag on a TORCH_TRACE vs tlparse on the same file, recorded run and 1 GiB (issue 27 §3); appends to bench/results.md
	$(BIN)/pip install -q -e ".[bench]"
	test -f bench/data/model.log -a -d bench/data/trace || $(BIN)/python bench/make_model_log.py
	$(BIN)/python -m compileall -q guarddiag
	$(BIN)/python bench/trace_bench.py $(BENCH_ARGS)

lint: venv  ## ruff over the package and tests
	$(BIN)/ruff check guarddiag tests

record-fixtures: venv  ## Re-record tests/fixtures/logs for the venv's torch (PY=python of another torch, see tests/fixtures/logs/README.md)
	$(BIN)/python tests/fixtures/record_logs.py --python $(or $(PY),$(BIN)/python)

# The trace fixtures' subset (tests/fixtures/traces/README.md says why each one is in).
TRACE_SCENARIOS := tensor_shape tensor_dtype grad_mode dict_keys global_variable float_hyperparameter fresh_module_instance recompile_limit graph_break no_recompile
TRACE_SCRIPTS := tests/fixtures/counting/reset_and_failures.py tests/fixtures/counting/limit_raised.py tests/fixtures/stances/printed_fail.py tests/fixtures/causes/module_dict_heads.py tests/fixtures/causes/tensor_aliasing.py tests/fixtures/causes/callable_argument.py

record-traces: venv  ## Re-record tests/fixtures/traces for the venv's torch: TORCH_TRACE folders with the text log of the same run
	$(BIN)/python tests/fixtures/record_logs.py --python $(or $(PY),$(BIN)/python) --trace $(addprefix --scenario ,$(TRACE_SCENARIOS)) $(addprefix --script ,$(TRACE_SCRIPTS))
	$(BIN)/python tests/fixtures/record_logs.py --python $(or $(PY),$(BIN)/python) --trace --script tests/fixtures/causes/float_global.py --env GUARDDIAG_FIXTURE_BACKEND=inductor --suffix inductor
	$(BIN)/python tests/fixtures/distributed/record_torchrun.py --python $(or $(PY),$(BIN)/python) trace_ranks trace_shape2

record-torchrun: venv  ## Re-record the torchrun jobs of tests/fixtures/logs/torch-<v>/torchrun (log dir, console, --tee, two nodes) with torch's counts per rank
	$(BIN)/python tests/fixtures/distributed/record_torchrun.py --python $(or $(PY),$(BIN)/python)

clean:  ## Remove the venv and run folders
	rm -rf $(VENV) .guarddiag
