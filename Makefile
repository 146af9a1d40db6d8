# tether — make targets. `make demo` and `make test` do all set-up themselves.

IMG ?= tether-operator:latest
LOCALBIN ?= $(shell pwd)/bin
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint
HELM ?= $(LOCALBIN)/helm
CONTROLLER_TOOLS_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
HELM_VERSION ?= v3.22.0

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-15s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs and RBAC from the kubebuilder markers.
	"$(CONTROLLER_GEN)" rbac:roleName=manager-role crd paths="./..." output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: controller-gen ## Generate the DeepCopy methods.
	"$(CONTROLLER_GEN)" object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: golangci-lint ## Run golangci-lint.
	"$(GOLANGCI_LINT)" run

.PHONY: control-plane
control-plane: ## Build kube-apiserver, etcd and kube-controller-manager into the cache (once).
	@hack/control-plane.sh >/dev/null

.PHONY: verify
verify: ## Regenerate everything generated and fail if it differs from what is committed.
	@hack/verify.sh

.PHONY: test
test: $(LOCALBIN) ## Run every test on a real local control plane (built on first use, beside the checks); fuzz seeds run as tests, fuzzing is `make fuzz`.
	@LOCALBIN="$(LOCALBIN)" hack/test.sh

.PHONY: ui-screenshots
ui-screenshots: ## Take the screenshots of `kubectl tether ui` in docs/images with headless Chromium (installs it if missing).
	@hack/chromium.sh
	@assets="$$(hack/control-plane.sh)"; \
	KUBEBUILDER_ASSETS="$$assets" TETHER_UI_SCREENSHOTS="$(CURDIR)/docs/images" \
		go test ./cmd/kubectl-tether/ -run '^TestClusterUIInABrowser$$' -count=1 -v | grep -E 'screenshot:|^(ok|FAIL|---)'

.PHONY: bench
bench: ## Measure the operator beside floors on a local control plane; table, CSV and chart in bin/bench (or BENCH_OUT).
	@assets="$$(hack/control-plane.sh)"; \
	KUBEBUILDER_ASSETS="$$assets" BENCH_SCALE=full BENCH_OUT="$${BENCH_OUT:-$(LOCALBIN)/bench}" \
		go test ./test/bench/ -run '^TestBench$$' -count=1 -v -timeout 90m

##@ Build

.PHONY: build
build: ## Build the operator, the kubectl plugin and the sample agents into bin/ (version stamped in).
	@echo "building bin/manager, bin/kubectl-tether, bin/worker, bin/orchestrator ($(VERSION))"
	@go mod download >/dev/null 2>&1 || go mod download
	@go build -ldflags "$(LDFLAGS)" -o bin/manager ./cmd
	@go build -ldflags "$(LDFLAGS)" -o bin/kubectl-tether ./cmd/kubectl-tether
	@cp cmd/kubectl-tether/kubectl_complete-tether bin/
	@go build -ldflags "$(LDFLAGS)" -o bin/worker ./examples/agents/worker
	@go build -ldflags "$(LDFLAGS)" -o bin/orchestrator ./examples/agents/orchestrator

.PHONY: run
run: ## Run the operator against the current kubeconfig.
	go run ./cmd --metrics-bind-address=0 --health-probe-bind-address=0

.PHONY: demo
demo: build ## Start a local control plane, the operator and sample agents, and run a delegation tree.
	@go build -o bin/demo ./hack/demo
	@bin/demo

.PHONY: docker-build
docker-build: ## Build the operator image (version, commit and date stamped in).
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg DATE=$(DATE) -t ${IMG} .

.PHONY: docker-push
docker-push: ## Push the operator image.
	docker push ${IMG}

.PHONY: install
install: ## Install the CRDs into the current cluster.
	kubectl apply --server-side -f config/crd/bases

.PHONY: uninstall
uninstall: ## Remove the CRDs from the current cluster.
	kubectl delete --ignore-not-found -f config/crd/bases

##@ Tools

$(LOCALBIN):
	mkdir -p "$(LOCALBIN)"

.PHONY: controller-gen
controller-gen: $(LOCALBIN) ## Install controller-gen into bin/.
	@hack/go-install.sh "$(CONTROLLER_GEN)" sigs.k8s.io/controller-tools/cmd/controller-gen $(CONTROLLER_TOOLS_VERSION)

.PHONY: golangci-lint
golangci-lint: $(LOCALBIN) ## Install golangci-lint into bin/.
	@hack/go-install.sh "$(GOLANGCI_LINT)" github.com/golangci/golangci-lint/v2/cmd/golangci-lint $(GOLANGCI_LINT_VERSION)

.PHONY: helm
helm: $(LOCALBIN) ## Install helm into bin/.
	@hack/install-helm.sh "$(HELM)" $(HELM_VERSION)

-include hack/make/*.mk
