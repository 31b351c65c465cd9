# The two commands of the README are `make run` and `make test`. Each creates or updates the
# virtual environment and builds the embedder model when it is missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
MODELS := build/models
# The CDK (jsii) prints a banner about Node 20 on every synth; the tests synth offline.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: run test install lint audit clients-deps browser bench clean

include layers/model/recipe/recipe.mk
include benchmarks/bench.mk

# `make run PORT=9000` listens on another port (default 8787).
PORT ?= 8787
run: install model
	$(PY) -m haki_local.cli serve --port $(PORT)

test: install model lint audit clients-deps browser
	$(PY) -m pytest

# The tests by cost: each test has one tier (set by folder in tests/tiers.py, named in
# pyproject.toml's markers); `make test` runs every tier.
#   test-unit     no database, no model, no server   test-db       the embedded PostgreSQL
#   test-model    the real embedder (and database)   test-http     a real local server, SDKs, MCP
#   test-browser  headless Chromium                  test-infra    the CDK synthesis
#   test-slow     the large data sets (on top of their tier)
#   test-fast     all but http, browser, infra and slow: the loop while changing the core
.PHONY: test-unit test-db test-model test-http test-browser test-infra test-slow test-fast
test-unit test-infra: install
	$(PY) -m pytest -m $(@:test-%=%)
test-db test-model test-slow: install model
	$(PY) -m pytest -m $(@:test-%=%)
test-http: install model clients-deps
	$(PY) -m pytest -m http
test-browser: install model browser
	$(PY) -m pytest -m browser
test-fast: install model
	$(PY) -m pytest -m "not http and not browser and not infra and not slow"

# The TypeScript SDK's pinned dev dependencies (openapi-typescript, typescript), from its
# committed lock file; its tests (tests/clients/test_typescript_sdk.py) build and run it.
TS_SDK := clients/typescript
clients-deps: $(TS_SDK)/node_modules/.package-lock.json
$(TS_SDK)/node_modules/.package-lock.json: $(TS_SDK)/package-lock.json
	cd $(TS_SDK) && npm ci --no-audit --no-fund

# Debian's Chromium for the trace console's test (tests/clients/test_console.py): installed
# when missing in a root shell with apt-get (as CI runs); elsewhere the test fails and says
# how to install it.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	  || echo "chromium is not installed: the trace console's browser tests will fail (apt-get install chromium)"

install: $(STAMP)

$(STAMP): pyproject.toml clients/python/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]' -e 'clients/python[dev,langchain]'
	touch $@

# ruff, the static types ([tool.mypy] of pyproject.toml), then the layering contract of
# pyproject.toml (infra/ is not an installed package).
lint: install
	$(PY) -m ruff check .
	$(PY) -m mypy
	PYTHONPATH=infra $(VENV)/bin/lint-imports

# Known vulnerabilities of the shipped pins; a printed skip when the advisory service is away.
audit: install
	$(PY) scripts/audit_dependencies.py

# The RDS CA bundle the migrations' owner connection verifies the database with (docs/deploy.md).
# Needs the internet; run before `make layer` on the machine that deploys.
RDS_CA_URL ?= https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem
RDS_CA := layers/model/haki_aws/rds-ca-bundle.pem
.PHONY: rds-ca
rds-ca:
	curl -fsSL --proto '=https' --tlsv1.2 $(RDS_CA_URL) -o $(RDS_CA).tmp
	grep -q 'BEGIN CERTIFICATE' $(RDS_CA).tmp && mv $(RDS_CA).tmp $(RDS_CA)
	@echo "$(RDS_CA): $$(grep -c 'BEGIN CERTIFICATE' $(RDS_CA)) certificates"

# Fuzzing, 1,000 examples per operation (14 operations) each way; the test suite runs 15:
# from docs/openapi.json against the local server over HTTP, with 1,000 writes of times at the
# edges of the accepted range (tests/e2e/test_fuzz.py); and in process through the handlers,
# with hostile values (forged cursors, NUL, invisible and look-alike characters, numbers as
# times: tests/handlers/test_fuzz_handlers.py). >= 28,000 cases, 0 5xx.
FUZZ_EXAMPLES ?= 1000
.PHONY: fuzz
fuzz: install model
	HAKI_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q tests/handlers/test_fuzz_handlers.py \
	  tests/e2e/test_fuzz.py

clean:
	rm -rf build .haki cdk.out
