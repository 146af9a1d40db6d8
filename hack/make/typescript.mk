##@ TypeScript agentkit

TS_AGENTKIT ?= sdk/typescript
TS_WORKER ?= examples/agents/ts-worker

.PHONY: ts-test
ts-test: ## Build and test the TypeScript agentkit (sdk/typescript) with the machine's Node (20+) and npm; part of `make test`.
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "ts-test: node and npm are needed (Node.js 20 or later)" >&2; exit 1; }
	@echo "typescript agentkit: node $$(node --version), npm $$(npm --version)"
	@echo "typescript agentkit: npm ci in $(TS_AGENTKIT)"
	@cd "$(TS_AGENTKIT)" && npm ci --no-audit --no-fund --loglevel=error
	@echo "typescript agentkit: npm run build (tsc)"
	@cd "$(TS_AGENTKIT)" && npm run --silent build
	@echo "typescript agentkit: npm test (tsc, node --test)"
	@cd "$(TS_AGENTKIT)" && npm test --silent
	@echo "typescript agentkit: npm ci and build in $(TS_WORKER)"
	@cd "$(TS_WORKER)" && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build

# `make test` builds and tests the TypeScript agentkit too; the interop
# tests (go test ./test/interop) then run its sample under the operator.
test: ts-test
