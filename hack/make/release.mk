##@ Release

GORELEASER ?= $(LOCALBIN)/goreleaser
GORELEASER_VERSION ?= v2.18.2
# goreleaser v2.18 needs Go 1.27; the go command fetches that toolchain from the
# module proxy on first install (GOTOOLCHAIN), the project itself stays on 1.26.
GORELEASER_GO ?= go1.27.1

# The chart's version is the release version: a tag vX.Y.Z must match it
# (hack/check-chart-version.sh). Builds between releases say so.
CHART_VERSION := $(shell sed -n 's/^version: *//p' charts/tether/Chart.yaml)
VERSION ?= $(shell git describe --tags --match 'v*' --exact-match 2>/dev/null || echo v$(CHART_VERSION)-dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
VERSION_PKG := github.com/tether-dev/tether/internal/version
LDFLAGS ?= -s -w -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT) -X $(VERSION_PKG).date=$(DATE)

.PHONY: goreleaser
goreleaser: $(LOCALBIN) ## Install goreleaser into bin/.
	@GOTOOLCHAIN=$(GORELEASER_GO) hack/go-install.sh "$(GORELEASER)" github.com/goreleaser/goreleaser/v2 $(GORELEASER_VERSION)

.PHONY: release-snapshot
release-snapshot: goreleaser helm chart-version-check ## Build every release archive and the chart package into dist/ (nothing published), then check their versions.
	@echo "release-snapshot: building the archives with goreleaser (log: dist/goreleaser.log)"
	@CHART_VERSION="$(CHART_VERSION)" "$(GORELEASER)" release --snapshot --clean --skip=publish,docker,sign >goreleaser.log 2>&1 || { cat goreleaser.log; exit 1; }
	@mv goreleaser.log dist/goreleaser.log
	@"$(HELM)" package charts/tether --destination dist >/dev/null
	@hack/check-release.sh dist "$(CHART_VERSION)"

.PHONY: release-check
release-check: goreleaser ## Check .goreleaser.yaml.
	"$(GORELEASER)" check

.PHONY: helm-package
helm-package: helm chart-version-check ## Package the chart into dist/ (chart version and appVersion as in Chart.yaml).
	@mkdir -p dist
	"$(HELM)" package charts/tether --destination dist

.PHONY: chart-version-check
chart-version-check: ## Fail when Chart.yaml's version, its appVersion and a release tag on HEAD disagree.
	@hack/check-chart-version.sh
