# secondary-scheduler: every entry point a developer or CI needs.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CLUSTER_DIR ?= $(CURDIR)/.cluster
LOCAL_KUBECONFIG := $(CLUSTER_DIR)/kubeconfig
NODES ?= e2e/cluster/nodes-default.yaml
IMAGE ?= secondary-scheduler:dev
OFFICIAL_BASE := python:3.12-slim
LOCAL_BASE := secondary-scheduler-base:bookworm
BASE_IMAGE ?=
KIND_CLUSTER ?= secondary-scheduler

.PHONY: install unit lint test e2e run image deploy bench bench-ab bench-e2e demo cluster-bins cluster-up \
        cluster-down deploy-e2e kind-e2e clean

install: $(VENV)/.installed

# The example plugins are installed as plugin authors' packages would be (their tests and the
# e2e suite use them).
EXAMPLE_PLUGINS := $(wildcard examples/plugins/*/pyproject.toml)
$(VENV)/.installed: pyproject.toml $(EXAMPLE_PLUGINS)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m pip install --quiet --no-deps $(patsubst %/pyproject.toml,-e %,$(EXAMPLE_PLUGINS))
	touch $@

## unit: the unit tests, in seconds, no cluster
unit: install
	$(PY) -m pytest -q tests examples

## lint: ruff, mypy --strict on scheduler/, the import layering contracts; the release kit:
## helm lint and the chart checked against manifests/, actionlint on the workflows, and the
## alerting rules' unit tests with promtool (the three tools built from their Go modules)
lint: install
	$(VENV)/bin/ruff check scheduler tests e2e bench examples hack
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	@tools=$$(bash hack/build-tools.sh | tail -n 1) && set -x && \
	$$tools/actionlint .github/workflows/*.yml && \
	$$tools/helm lint --strict charts/secondary-scheduler && \
	$(PY) hack/check-chart.py $$tools/helm && \
	bash hack/test-alerts.sh $$tools/promtool $(PY)

## test: the README's test command: unit tests, then the e2e suite on a real control plane
test: unit e2e

## e2e: against $$KUBECONFIG when E2E_KUBECONFIG is set, else a local control plane it starts and stops
e2e: install cluster-bins
	$(PY) -m pytest -q e2e

cluster-bins:
	bash e2e/cluster/build.sh >/dev/null

cluster-up: install cluster-bins
	$(PY) e2e/cluster/cluster.py up --nodes $(NODES)

cluster-down: install
	$(PY) e2e/cluster/cluster.py down

## run: the scheduler against the local control plane (make cluster-up first)
run: install
	$(PY) -m scheduler --kubeconfig $(LOCAL_KUBECONFIG)

## demo: the README's first command: nodes, priority classes, placement and a preemption you can watch
demo: install cluster-bins
	$(PY) e2e/demo.py

## bench: in-process benchmarks (scheduling cycles, a rescheduler pass); JSON in bench/results/
bench: install
	$(PY) bench/run.py
	$(PY) bench/rescheduler.py
	$(PY) bench/rescheduler.py --worst-case
	$(PY) bench/rescheduler_convergence.py

## bench-ab: this working tree against BASE (a git ref), the two taking turns on blocks of
## ReplicaSet pods so that both see the host at the same speed (JSON in bench/results/)
bench-ab: install
	$(PY) bench/ab.py $(BASE) $(BENCH_AB_ARGS)

## bench-e2e: kube-scheduler and ours side by side on a local control plane (JSON + PNG in
## bench/results/; BENCH_E2E_ARGS=--quick for a smoke run, --nodes 5000 for the big one)
bench-e2e: install cluster-bins
	$(PY) -c 'import matplotlib' 2>/dev/null || $(PY) -m pip install --quiet -e '.[bench]'
	$(PY) bench/e2e.py $(BENCH_E2E_ARGS)

## image: the Dockerfile; on the official python base where it can be pulled, else on one built
## here from Debian's packages (image/debian-base.sh)
image:
	@command -v docker >/dev/null || { echo "make image: docker is missing; install it with: apt-get install -y docker.io" >&2; exit 1; }
	@base=$(BASE_IMAGE); \
	if [ -z "$$base" ]; then \
	  base=$(OFFICIAL_BASE); \
	  docker image inspect $$base >/dev/null 2>&1 || docker pull -q $$base >/dev/null 2>&1 || { \
	    base=$(LOCAL_BASE); \
	    echo "make image: $(OFFICIAL_BASE) cannot be pulled; using $$base from Debian's packages"; \
	    docker image inspect $$base >/dev/null 2>&1 || bash image/debian-base.sh $$base; }; \
	fi; \
	docker build --network host --build-arg BASE_IMAGE=$$base -t $(IMAGE) . >/dev/null && \
	echo "make image: $(IMAGE) on $$base, $$(docker image inspect -f '{{.Size}}' $(IMAGE) | awk '{printf "%.0f MB", $$1/1e6}')"

deploy:
	kubectl apply -k manifests/

## deploy-e2e: the image built here, deployed with kubectl onto a real kubelet node of the local
## control plane, then the whole e2e suite against it (E2E_SCHEDULER=deployed)
deploy-e2e: install
	$(PY) e2e/deploy/deploy.py

## kind-e2e: what the GitHub workflow does, on a machine with Docker and kind
kind-e2e: install image
	kind get clusters | grep -qx $(KIND_CLUSTER) || kind create cluster --name $(KIND_CLUSTER) --wait 120s
	bash e2e/kind-setup.sh
	kind load docker-image $(IMAGE) --name $(KIND_CLUSTER)
	kubectl apply -k e2e/deploy/overlay
	kubectl -n secondary-scheduler rollout status deployment/secondary-scheduler --timeout=180s
	E2E_KUBECONFIG=$${KUBECONFIG:-$$HOME/.kube/config} E2E_SCHEDULER=deployed $(PY) -m pytest -q e2e

clean: cluster-down
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
