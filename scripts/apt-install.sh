#!/usr/bin/env bash
# Installs one Debian package that a test needs from the system, for one of its commands.
#
#   scripts/apt-install.sh [--no-service] PACKAGE COMMAND
#
# Idempotent and quiet: exits 0 at once when COMMAND is already on the PATH (sbin folders included). apt-get
# update runs only when a first install attempt fails (a stale or empty package index). apt's output goes to
# a log shown only when the install fails. Exits non-zero, saying why, when it cannot install; the test that
# asked then skips with that reason (fails in CI, where ROCKETMQ_REQUIRE_PEERS is set).
#
# --no-service: the package would start a service of its own on install (Prometheus listens on every
# interface). The install then runs under a policy-rc.d that forbids starting services -- put there for the
# install and removed afterwards, unless the machine already has one: then that one decides, as it does in
# Debian's container images -- and the service the package enabled for the next boot is disabled again.
set -euo pipefail

readonly POLICY=/usr/sbin/policy-rc.d

no_service=false
if [[ "${1:-}" == "--no-service" ]]; then
    no_service=true
    shift
fi
[[ $# -eq 2 ]] || { echo "usage: $0 [--no-service] PACKAGE COMMAND" >&2; exit 2; }
package="$1"
command_name="$2"

fail() {
    echo "apt-install $package: $*" >&2
    exit 1
}

have_command() {
    PATH="$PATH:/usr/sbin:/sbin" command -v "$command_name" >/dev/null
}

if have_command; then
    exit 0
fi

[[ "$(uname -s)" == "Linux" ]] || fail "$command_name is missing and only Debian's package is installed here; this is $(uname -s)"
command -v apt-get >/dev/null || fail "$command_name is missing and there is no apt-get to install it (not Debian?)"
sudo_cmd=()
if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || fail "$command_name is missing; installing it needs root (or sudo)"
    sudo_cmd=(sudo -n)
fi

own_policy=false
apt_log="$(mktemp -t apt-install-XXXXXX)"
clean_up() {
    if [[ "$own_policy" == true ]]; then
        "${sudo_cmd[@]}" rm -f "$POLICY"
    fi
    rm -f "$apt_log"
}
trap clean_up EXIT
# Exit status 101 is "action forbidden" to invoke-rc.d and deb-systemd-invoke, which the package's
# maintainer scripts call to start the service.
if [[ "$no_service" == true && ! -e "$POLICY" ]]; then
    printf '#!/bin/sh\n# scripts/apt-install.sh: no service starts while it installs\nexit 101\n' |
        "${sudo_cmd[@]}" tee "$POLICY" >/dev/null
    "${sudo_cmd[@]}" chmod 755 "$POLICY"
    own_policy=true
fi

install_package() {
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "$package" \
        >>"$apt_log" 2>&1
}

echo "apt-install: installing Debian's $package package$([[ "$no_service" == true ]] && echo " (its service is not started)")"
if ! install_package; then
    "${sudo_cmd[@]}" apt-get update -qq >>"$apt_log" 2>&1 || fail "apt-get update failed: $(tail -n 3 "$apt_log")"
    install_package || fail "apt-get install $package failed: $(tail -n 3 "$apt_log" | tr '\n' ' ')"
fi
have_command || fail "the $package package was installed but no $command_name command is there"

if [[ "$no_service" == true ]]; then
    # Not at the next boot either: the only servers of this kind here are the ones tests start.
    if [[ -d /run/systemd/system ]]; then
        "${sudo_cmd[@]}" systemctl disable --quiet "$package.service" 2>/dev/null || true
    elif command -v update-rc.d >/dev/null; then
        "${sudo_cmd[@]}" update-rc.d "$package" disable >/dev/null 2>&1 || true
    fi
fi
echo "apt-install: $package installed"
