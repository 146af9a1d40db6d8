##@ Interoperability

.PHONY: interop
interop: ## Run tether against agents built on the official A2A JS SDK (needs node and npm; npm ci on first use).
	INTEROP_REQUIRED=1 go test ./test/interop/ -count=1 -v

.PHONY: js-agent
js-agent: ## Install the JS SDK agent's locked dependencies (examples/agents/js-echo) when missing or stale; the interop tests and the bench run it.
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "js-agent: node and npm are needed (Node.js 20 or later)" >&2; exit 1; }
	@cd examples/agents/js-echo && { [ node_modules/.package-lock.json -nt package-lock.json ] || { echo "js-agent: npm ci in examples/agents/js-echo"; npm ci --no-audit --no-fund --loglevel=error; }; }

# Installed before the Go tests start, so the interop tests and the bench
# (two packages go test may run at once) never install it side by side.
test: js-agent
bench: js-agent
