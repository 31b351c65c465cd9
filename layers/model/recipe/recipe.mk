# Model and layer recipes (owned by the embedder work). Defines `model` and `layer`.
.PHONY: model layer
model: install
	@echo "model recipe not written yet"
layer: model
	@echo "layer recipe not written yet"
