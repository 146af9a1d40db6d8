##@ Chart

CHART_DIR ?= charts/tether
# Values that switch the chart to namespaced RBAC; lint and template both ways.
CHART_NAMESPACED_VALUES ?= --set 'watchNamespaces={team-a,team-b}'

.PHONY: chart
chart: manifests ## Regenerate the parts of charts/tether that come from config/ (CRDs, RBAC rules, Argo CD checks).
	@hack/chart.sh

.PHONY: helm-lint
helm-lint: helm ## Lint the chart with default values and with watchNamespaces.
	"$(HELM)" lint --strict $(CHART_DIR)
	"$(HELM)" lint --strict $(CHART_DIR) $(CHART_NAMESPACED_VALUES)

.PHONY: helm-template
helm-template: helm ## Render the chart with default values and with watchNamespaces.
	"$(HELM)" template tether $(CHART_DIR) --namespace tether-system >/dev/null
	"$(HELM)" template tether $(CHART_DIR) --namespace tether-system $(CHART_NAMESPACED_VALUES) >/dev/null
	@echo "helm-template: chart renders with default values and with watchNamespaces"
