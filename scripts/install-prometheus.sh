#!/usr/bin/env bash
# Installs what the Prometheus integration test (tests/integration/test_prometheus.py) needs from the
# system: Debian's prometheus package, for its server binary only. The test runs its own server (its own
# config, data folder and free loopback port), started and stopped by pid.
#
# Debian's package would start a service of its own on install, listening on every interface on port 9090.
# So the install runs under a policy-rc.d that forbids starting services (one put there for the install
# and removed afterwards, unless the machine already has one: then that one decides, as it does in Debian's
# container images), and the service the package enabled for the next boot is disabled again.
# A prometheus already installed is left exactly as it is (its service, if someone runs one, included).
#
# Idempotent and quiet: exits 0 at once when prometheus is already there. apt-get update runs only when a
# first install attempt fails (a stale or empty package index). Exits non-zero, saying why, when it cannot
# install; the test then skips with that reason (fails in CI, where ROCKETMQ_REQUIRE_PEERS is set).
set -euo pipefail

readonly POLICY=/usr/sbin/policy-rc.d

fail() {
    echo "install-prometheus: $*" >&2
    exit 1
}

if command -v prometheus >/dev/null; then
    exit 0
fi

[[ "$(uname -s)" == "Linux" ]] || fail "prometheus is missing and only Debian's package is installed here; this is $(uname -s)"
command -v apt-get >/dev/null || fail "prometheus is missing and there is no apt-get to install it (not Debian?)"
sudo_cmd=()
if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || fail "prometheus is missing; installing it needs root (or sudo)"
    sudo_cmd=(sudo -n)
fi

# Exit status 101 is "action forbidden" to invoke-rc.d and deb-systemd-invoke, which the package's
# maintainer scripts call to start the service.
own_policy=false
apt_log="$(mktemp -t install-prometheus-XXXXXX)"
clean_up() {
    if [[ "$own_policy" == true ]]; then
        "${sudo_cmd[@]}" rm -f "$POLICY"
    fi
    rm -f "$apt_log"
}
trap clean_up EXIT
if [[ ! -e "$POLICY" ]]; then
    printf '#!/bin/sh\n# scripts/install-prometheus.sh: no service starts while it installs\nexit 101\n' |
        "${sudo_cmd[@]}" tee "$POLICY" >/dev/null
    "${sudo_cmd[@]}" chmod 755 "$POLICY"
    own_policy=true
fi

# apt's output (debconf's notes included) goes to a log, shown only when the install fails.
install_prometheus() {
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends prometheus \
        >>"$apt_log" 2>&1
}

echo "install-prometheus: installing Debian's prometheus package (its service is not started)"
if ! install_prometheus; then
    "${sudo_cmd[@]}" apt-get update -qq >>"$apt_log" 2>&1 || fail "apt-get update failed: $(tail -n 3 "$apt_log")"
    install_prometheus || fail "apt-get install prometheus failed: $(tail -n 3 "$apt_log" | tr '\n' ' ')"
fi
command -v prometheus >/dev/null || fail "prometheus still missing after installing it"

# Not at the next boot either: the only Prometheus servers here are the ones tests start.
if [[ -d /run/systemd/system ]]; then
    "${sudo_cmd[@]}" systemctl disable --quiet prometheus.service 2>/dev/null || true
elif command -v update-rc.d >/dev/null; then
    "${sudo_cmd[@]}" update-rc.d prometheus disable >/dev/null 2>&1 || true
fi
echo "install-prometheus: $(prometheus --version 2>&1 | head -n 1)"
