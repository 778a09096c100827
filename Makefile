# kubebuilder's workflow targets; the logic lives in the binaries, these stay thin.
CARGO ?= cargo
# The image `make docker-build` tags and `make deploy` / `make build-installer` run, as kubebuilder names them.
IMG ?= operator:dev
CONTAINER_TOOL ?= docker
# Where `make build-installer` writes install.yaml.
DIST ?= dist
# The image holds one static binary: musl's libc is linked in (`rustup target add` it once).
STATIC_TARGET := x86_64-unknown-linux-musl
OPERATOR := $(CARGO) run -q -p operator --bin operator --

.PHONY: help build test control-plane e2e conformance go-peer helm bench fmt lint manifests generate package-check install uninstall run dev apiserver static-binary docker-build deploy undeploy build-installer helm-chart

# Which tiers `make test` runs: embedded (the embedded API server), real (the upstream kube-apiserver,
# etcd and kube-controller-manager built from testenv/control-plane), cluster (a real single-node
# cluster from testenv/cluster, as root), both (embedded and real) or all. scripts/test.sh picks the
# nextest profiles in .config/nextest.toml.
TEST_CONTROL_PLANE ?= all

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## Build every binary (the operator without dev mode, as released).
	$(CARGO) build --workspace --bins

test: ## Run every test on every tier (TEST_CONTROL_PLANE=embedded|real|cluster|both for fewer).
	TEST_CONTROL_PLANE=$(TEST_CONTROL_PLANE) bash scripts/test.sh

control-plane: ## Build the upstream control plane the real tier runs (cached; skipped when up to date).
	bash testenv/control-plane/build.sh

e2e: ## Build the upstream e2e suite the conformance tier runs (cached; skipped when up to date).
	bash testenv/e2e/build.sh

conformance: ## The upstream e2e tier in full: slow and baselined specs too (docs/conformance.md).
	bash scripts/test-deps.sh
	bash testenv/control-plane/build.sh >/dev/null
	bash testenv/e2e/build.sh >/dev/null
	E2E_FULL=1 $(CARGO) nextest run -p conformance --test e2e --success-output immediate

helm: ## Build Helm from its Go module, for the chart's tests (cached; skipped when up to date); prints its directory.
	bash testenv/helm/build.sh

go-peer: ## Build the controller-runtime PostgresWriter the convergence bench runs beside ours (cached; the bench builds it too).
	bash testenv/go-peer/build.sh

bench: ## Run the benchmarks (figures go in BENCHMARKS.md; the convergence bench builds testenv/go-peer, which needs go).
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

generate: ## Write crates/apimachinery/generated again from the Kubernetes Go modules (what a build without Go reads).
	UPDATE_SNAPSHOT=1 $(CARGO) test -q -p apimachinery --lib the_committed_snapshot_says_what_the_go_modules_say

package-check: ## Package kube-envtest and its crates, and build and test examples/configmap-mirror against the packages (no Go).
	bash scripts/package-check.sh

install: ## Apply the CRDs to the cluster in KUBECONFIG.
	$(OPERATOR) install

uninstall: ## Delete the CRDs from the cluster in KUBECONFIG (and the webhook configurations a killed `make run` left).
	$(OPERATOR) uninstall

run: ## Run the controllers against the cluster in KUBECONFIG; after `make install`, serving the webhooks (VoteConfig's conversion) from here.
	$(OPERATOR) run

dev: ## Embedded API server + throwaway PostgreSQL + every controller, on this machine.
	$(CARGO) run -q -p operator --features dev --bin operator -- dev

apiserver: ## Only the embedded API server, kubeconfig in .dev/kubeconfig.
	$(CARGO) run -q -p apiserver --bin apiserver -- --kubeconfig .dev/kubeconfig

static-binary: ## Build the static binary the image holds (profile image: release with whole-program LTO; the convergence bench runs it too); prints its path.
	$(CARGO) build --profile image --target $(STATIC_TARGET) -p operator --bin operator
	@echo $(CURDIR)/target/$(STATIC_TARGET)/image/operator

docker-build: static-binary ## Build the operator image IMG (the static binary first, then the Dockerfile; no registry needed).
	$(CONTAINER_TOOL) build -t $(IMG) .

deploy: build-installer ## Deploy the CRDs, RBAC, the manager (image IMG) and its webhooks to the cluster in KUBECONFIG.
	kubectl apply -f $(DIST)/install.yaml

undeploy: build-installer ## Remove everything deploy created (the CRDs, and with them every resource of these kinds, too).
	@# Our resources first, while the manager still runs: PostgresWriters' finalizers need it to delete
	@# their rows. Without the CRDs (nothing deployed) there is nothing to delete.
	if kubectl get crd postgreswriters.demo.yash.com >/dev/null 2>&1; then \
	  kubectl delete postgreswriters.demo.yash.com,voteconfigs.voting.schoolofdevops.com,webapps.example.com \
	    --all --all-namespaces --ignore-not-found --wait; fi
	kubectl delete --ignore-not-found --wait -f $(DIST)/install.yaml

build-installer: ## Write $(DIST)/install.yaml: everything deploy applies, for `kubectl apply -f` (image IMG).
	mkdir -p $(DIST)
	bash scripts/manifests.sh $(IMG) > $(DIST)/install.yaml

helm-chart: build-installer ## Write $(DIST)/chart: the Helm chart, generated from $(DIST)/install.yaml (image IMG by default).
	python3 scripts/helm-chart.py $(DIST)/install.yaml $(IMG) $(DIST)/chart
