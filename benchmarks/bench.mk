# The benchmarks (docs/benchmarks.md): scale and ingest. Included by the top-level
# Makefile, which defines PY and the install / model targets.
#   make bench-quick   10k and 100k facts, under 3 minutes once the model is built
#   make bench         + 1M facts in one scope, 1M facts over 1,000 scopes (~40 minutes the
#                      first time; loaded data sets are kept in build/bench-pg/ and reused)
# Extra arguments: make bench BENCH_ARGS="--provider minilm-l6"
BENCH_ARGS ?=

.PHONY: bench bench-quick

bench: install model
	$(PY) -m benchmarks.scale --reuse $(BENCH_ARGS)

bench-quick: install model
	$(PY) -m benchmarks.scale --quick --reuse $(BENCH_ARGS)

# The load test of the local API (benchmarks/load.py): 1 client, then N clients x 60 s.
LOAD_ARGS ?=
.PHONY: load
load: install model
	$(PY) -m benchmarks.load $(LOAD_ARGS)

# The ingest benchmark (benchmarks/ingest.py): the write routes through `haki serve` on a scratch
# data folder over local HTTP; a few minutes. Results: benchmarks/results/ingest.json.
.PHONY: bench-ingest

bench-ingest: install model
	$(PY) -m benchmarks.ingest
