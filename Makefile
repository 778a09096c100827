# kubebuilder's workflow targets; the logic lives in the binaries, these stay thin.
CARGO ?= cargo
OPERATOR := $(CARGO) run -q -p operator --bin operator --

.PHONY: help build test control-plane e2e conformance bench fmt lint manifests install uninstall run dev apiserver docker-build deploy undeploy

# Which control plane the integration tests run against: embedded, real (the upstream kube-apiserver,
# etcd and kube-controller-manager built from testenv/control-plane) or both. Each picks a nextest
# profile in .config/nextest.toml.
TEST_CONTROL_PLANE ?= both
NEXTEST_PROFILE = $(or $(if $(filter both,$(TEST_CONTROL_PLANE)),default),$(filter embedded real,$(TEST_CONTROL_PLANE)),$(error TEST_CONTROL_PLANE must be embedded, real or both, not "$(TEST_CONTROL_PLANE)"))

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## Build every binary (the operator without dev mode, as released).
	$(CARGO) build --workspace --bins

test: ## Run the whole test suite on both control planes (TEST_CONTROL_PLANE=embedded|real for one).
	bash scripts/test-deps.sh
	$(if $(filter embedded,$(TEST_CONTROL_PLANE)),,bash testenv/control-plane/build.sh >/dev/null)
	$(if $(filter embedded,$(TEST_CONTROL_PLANE)),,bash testenv/e2e/build.sh >/dev/null)
	$(CARGO) nextest run --workspace --no-fail-fast --profile $(NEXTEST_PROFILE)

control-plane: ## Build the upstream control plane the real tier runs (cached; skipped when up to date).
	bash testenv/control-plane/build.sh

e2e: ## Build the upstream e2e suite the conformance tier runs (cached; skipped when up to date).
	bash testenv/e2e/build.sh

conformance: ## The upstream e2e tier in full: slow and baselined specs too (docs/conformance.md).
	bash scripts/test-deps.sh
	bash testenv/control-plane/build.sh >/dev/null
	bash testenv/e2e/build.sh >/dev/null
	E2E_FULL=1 $(CARGO) nextest run -p conformance --test e2e --success-output immediate

bench: ## Run the benchmarks (figures go in BENCHMARKS.md).
	$(CARGO) bench --workspace

fmt: ## Format the code.
	$(CARGO) fmt --all

lint: ## Check formatting and clippy (the release binary, without dev mode, too).
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p operator --bin operator -- -D warnings

manifests: ## Write the generated CRDs into config/crd and the webhook manifests into config/webhook.
	$(OPERATOR) crds --out-dir config/crd
	$(OPERATOR) webhooks --out-dir config/webhook

install: ## Apply the CRDs to the cluster in KUBECONFIG.
	$(OPERATOR) install

uninstall: ## Delete the CRDs from the cluster in KUBECONFIG.
	$(OPERATOR) uninstall

run: ## Run the controllers against the cluster in KUBECONFIG.
	$(OPERATOR) run

dev: ## Embedded API server + throwaway PostgreSQL + every controller, on this machine.
	$(CARGO) run -q -p operator --features dev --bin operator -- dev

apiserver: ## Only the embedded API server, kubeconfig in .dev/kubeconfig.
	$(CARGO) run -q -p apiserver --bin apiserver -- --kubeconfig .dev/kubeconfig

docker-build: ## Build the operator image.
	docker build -t operator:dev .

deploy: ## Deploy CRDs, RBAC and the manager to the cluster in KUBECONFIG.
	kubectl apply -k config/default

undeploy: ## Remove what deploy created.
	kubectl delete -k config/default
