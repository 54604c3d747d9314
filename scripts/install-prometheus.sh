#!/usr/bin/env bash
# Installs what the Prometheus integration test (tests/integration/test_prometheus.py) needs from the
# system: Debian's prometheus package, for its server binary only. The test runs its own server (its own
# config, data folder and free loopback port), started and stopped by pid; the package's own service is
# neither started nor enabled (see apt-install.sh's --no-service). A prometheus already installed is left
# exactly as it is.
set -euo pipefail
exec "$(dirname "$0")/apt-install.sh" --no-service prometheus prometheus
