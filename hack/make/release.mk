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

SYFT ?= $(LOCALBIN)/syft
SYFT_VERSION ?= v1.57.1

.PHONY: goreleaser
goreleaser: $(LOCALBIN) ## Install goreleaser into bin/.
	@GOTOOLCHAIN=$(GORELEASER_GO) hack/go-install.sh "$(GORELEASER)" github.com/goreleaser/goreleaser/v2 $(GORELEASER_VERSION)

.PHONY: syft
syft: $(LOCALBIN) ## Install syft (goreleaser's SBOM generator) into bin/.
	@hack/go-install.sh "$(SYFT)" github.com/anchore/syft/cmd/syft $(SYFT_VERSION)

# Signing needs cosign and an OIDC identity, so the snapshot skips it;
# goreleaser check validates its configuration. Images need a Docker engine
# with buildx: the snapshot runs goreleaser's image step against
# hack/release/offline-docker, which checks each image's references, its
# Dockerfile stage and build context for both platforms, and records the
# buildx command instead of building (dist/images/). check-release.sh checks
# the rest of what a release ships. With a Docker engine, real images:
# goreleaser release --snapshot --clean --skip=publish,sign. goreleaser gives
# up after an hour by default; on a busy two-core machine the 11 cross builds
# alone took that long, hence the longer timeout.
.PHONY: release-snapshot
release-snapshot: goreleaser syft helm chart-version-check ## Build every release file into dist/ (nothing published or signed) and check it: archives, SBOMs, krew manifest, install.yaml, tether-crds.yaml, the chart, the images' build plan.
	@start=$$(date +%s); \
	"$(GORELEASER)" check; \
	echo "release-snapshot: cross-compiling 11 binaries, archives, SBOMs, the images' build plans and the krew manifest with goreleaser (tens of minutes on two cores; log: dist/goreleaser.log)"; \
	PATH="$(CURDIR)/hack/release/offline-docker:$(LOCALBIN):$$PATH" IMAGE_PLAN_DIR="$(CURDIR)/dist/images" CHART_VERSION="$(CHART_VERSION)" \
		"$(GORELEASER)" release --snapshot --clean --skip=publish,sign --timeout=3h 2>&1 | tee "$(LOCALBIN)/goreleaser.log"; \
	mv "$(LOCALBIN)/goreleaser.log" dist/goreleaser.log; \
	echo "release-snapshot: install.yaml, tether-crds.yaml, the chart package and its push (dry run)"; \
	mv dist/install.yaml dist/images/install.from-post-hook.yaml; \
	go run ./hack/release/manifests --tag "$(CHART_VERSION)" --out dist >/dev/null; \
	"$(HELM)" package charts/tether --destination dist >/dev/null; \
	DRY_RUN=1 HELM="$(HELM)" hack/release/publish-chart.sh dist/tether-$(CHART_VERSION).tgz >dist/publish-chart.log; \
	hack/check-release.sh dist "$(CHART_VERSION)"; \
	echo "release-snapshot: done in $$(( $$(date +%s) - start ))s; dist/ holds:"; \
	cd dist && find . -maxdepth 2 -type f ! -name '*.log' | sort

.PHONY: release-check
release-check: goreleaser ## Check .goreleaser.yaml.
	"$(GORELEASER)" check

.PHONY: release-manifests
release-manifests: ## Write install.yaml and tether-crds.yaml for the chart's version into dist/ (image by tag; a release adds the digest).
	go run ./hack/release/manifests --tag "$(CHART_VERSION)" --out dist

.PHONY: helm-package
helm-package: helm chart-version-check ## Package the chart into dist/ (chart version and appVersion as in Chart.yaml).
	@mkdir -p dist
	"$(HELM)" package charts/tether --destination dist

.PHONY: chart-version-check
chart-version-check: ## Fail when Chart.yaml's version, its appVersion and a release tag on HEAD disagree.
	@hack/check-chart-version.sh
