##@ Interoperability

.PHONY: interop
interop: ## Run tether against agents built on the official A2A JS SDK (needs node and npm; npm ci on first use).
	INTEROP_REQUIRED=1 go test ./test/interop/ -count=1 -v
