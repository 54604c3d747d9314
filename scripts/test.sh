#!/usr/bin/env bash
# Installs the project with its test extras into ./.venv and runs every check: lint, types, all tests.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test,spark]'
# The Apache C++ client (PyPI's rocketmq wheel, Linux x86_64 only) is an independent peer in integration tests.
if [[ "$(uname -s)-$(uname -m)" == "Linux-x86_64" ]]; then
    ./scripts/install-cpp-client.sh
fi

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
.venv/bin/pytest -q -p no:cacheprovider "$@"
