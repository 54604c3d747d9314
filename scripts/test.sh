#!/usr/bin/env bash
# Installs the project with its test extras into ./.venv and runs every check: lint, types, all tests.
#
# The integration suite runs against real peers, fetched at test time into a cache outside the work tree
# ($RMQ_IT_CACHE, default ~/.cache/rocketmq-toolkit-it): Apache RocketMQ's servers, Proxy, mqadmin, Java client
# and Java gRPC client from Maven Central (mvn), the Go client from the Go module proxy (go build), the C++
# client and the Python gRPC SDK from PyPI, and a
# Docker image built here from the same jars (a Docker engine is started when none answers; it is stopped
# again at the end). In CI (CI=true) a peer that cannot run fails its tests instead of skipping them.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test,spark,otel]'
# The Apache C++ client (PyPI's rocketmq wheel, Linux x86_64 only) is an independent peer in integration tests.
if [[ "$(uname -s)-$(uname -m)" == "Linux-x86_64" ]]; then
    ./scripts/install-cpp-client.sh
fi
./scripts/install-net-tools.sh || echo "no iptables here: the network-fault test skips (fails in CI)"
# Debian's Prometheus server (its package's service neither started nor enabled): the Prometheus test runs
# its own. Installed here so that its install time does not count as the test's.
./scripts/install-prometheus.sh || echo "no prometheus here: the Prometheus test skips (fails in CI)"

if [[ "${CI:-}" == "true" ]]; then
    export ROCKETMQ_REQUIRE_PEERS=1
fi
docker_run_dir="$(mktemp -d -t rmq-dockerd-XXXXXX)"
stop_docker() {
    if [[ -f "$docker_run_dir/dockerd.pid" ]]; then
        ./scripts/stop-docker.sh "$docker_run_dir/dockerd.pid" || true
    fi
    rm -rf "$docker_run_dir"
}
trap stop_docker EXIT
echo "== docker engine"
./scripts/ensure-docker.sh "$docker_run_dir" >/dev/null ||
    echo "no Docker engine here: the docker providers skip (fail in CI)"

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy
# The wheel and the sdist, installed outside the work tree on Python 3.12 and 3.13 (before the long suite,
# so that a broken package fails fast; RMQ_CHECK_DIST=0 leaves it out of a local run).
[[ "${RMQ_CHECK_DIST:-1}" == "0" ]] || ./scripts/check-dist.sh
echo "== pytest"
# Every test process imports the project afresh (servers, rmq calls, Spark's Python workers: about 800 of
# them), and under PYTHONDONTWRITEBYTECODE none would write the bytecode it compiled for the next one.
# Every top-level package: a list by hand had left out client/, which nearly every one of them imports.
packages=()
for init in */__init__.py; do
    packages+=("${init%/__init__.py}")
done
.venv/bin/python -m compileall -q -j 0 "${packages[@]}" >/dev/null
# The slowest tests are listed at the end: CI must stay short, and this says where its time goes.
# A test the C++ client failed through its own lock contention (PeerClientContention, never a server's
# doing) runs once more; every other failure counts at once.
# Two worker processes (pytest-xdist; RMQ_TEST_WORKERS to change, 0 for none): integration tests mostly wait
# on other processes, and tests/conftest.py keeps each provider's cluster and each module's servers on one
# worker, so nothing expensive starts twice.
.venv/bin/pytest -q -p no:cacheprovider --durations=25 --reruns 1 --only-rerun "^PeerClientContention:" \
    -n "${RMQ_TEST_WORKERS:-2}" --dist loadgroup "$@"
