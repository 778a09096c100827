# kubebuilder's workflow targets; the logic lives in the binaries, these stay thin.
CARGO ?= cargo
OPERATOR := $(CARGO) run -q -p operator --bin operator --

.PHONY: help build test bench fmt lint manifests install uninstall run dev apiserver docker-build deploy undeploy

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## Build every binary.
	$(CARGO) build --workspace --bins

test: ## Run the whole test suite (installs PostgreSQL and the Python client when missing).
	bash scripts/test-deps.sh
	$(CARGO) nextest run --workspace --no-fail-fast

bench: ## Run the benchmarks (figures go in BENCHMARKS.md).
	$(CARGO) bench --workspace

fmt: ## Format the code.
	$(CARGO) fmt --all

lint: ## Check formatting and clippy.
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets

manifests: ## Write the generated CRDs into config/crd.
	$(OPERATOR) crds --out-dir config/crd

install: ## Apply the CRDs to the cluster in KUBECONFIG.
	$(OPERATOR) install

uninstall: ## Delete the CRDs from the cluster in KUBECONFIG.
	$(OPERATOR) uninstall

run: ## Run the controllers against the cluster in KUBECONFIG.
	$(OPERATOR) run

dev: ## Embedded API server + throwaway PostgreSQL + every controller, on this machine.
	$(OPERATOR) dev

apiserver: ## Only the embedded API server, kubeconfig in .dev/kubeconfig.
	$(CARGO) run -q -p apiserver --bin apiserver -- --kubeconfig .dev/kubeconfig

docker-build: ## Build the operator image.
	docker build -t operator:dev .

deploy: ## Deploy CRDs, RBAC and the manager to the cluster in KUBECONFIG.
	kubectl apply -k config/default

undeploy: ## Remove what deploy created.
	kubectl delete -k config/default
