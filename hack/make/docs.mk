##@ Documentation

CRD_REF_DOCS ?= $(LOCALBIN)/crd-ref-docs
CRD_REF_DOCS_VERSION ?= v0.2.0

.PHONY: api-docs
api-docs: crd-ref-docs ## Render the API reference (docs/api.md) from the types in api/.
	@"$(CRD_REF_DOCS)" --log-level ERROR --renderer markdown \
		--config hack/api-docs/config.yaml --templates-dir hack/api-docs/templates \
		--source-path api --output-path docs/api.md

.PHONY: crd-ref-docs
crd-ref-docs: $(LOCALBIN) ## Install crd-ref-docs into bin/.
	@hack/go-install.sh "$(CRD_REF_DOCS)" github.com/elastic/crd-ref-docs $(CRD_REF_DOCS_VERSION)
