#!/usr/bin/env bash
# Installs what the network-fault integration test (tests/integration/test_network_faults.py) needs from the
# system: Debian's iptables package. The test cuts a broker off with iptables rules inside a network
# namespace of its own (unshare --net, from util-linux, which every Debian has), so nothing outside it is
# touched. Toxiproxy, the other tool it uses, is built by the test itself from the Go module proxy.
#
# Idempotent and quiet: exits 0 at once when iptables is already there. apt-get update runs only when a
# first install attempt fails (a stale or empty package index). Exits non-zero, saying why, when it cannot
# install; the test then skips with that reason (fails in CI).
set -euo pipefail

fail() {
    echo "install-net-tools: $*" >&2
    exit 1
}

have_iptables() {
    PATH="$PATH:/usr/sbin:/sbin" command -v iptables >/dev/null
}

if have_iptables; then
    exit 0
fi

[[ "$(uname -s)" == "Linux" ]] || fail "iptables and network namespaces are Linux only; this is $(uname -s)"
command -v apt-get >/dev/null || fail "iptables is missing and there is no apt-get to install it (not Debian?)"
sudo_cmd=()
if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || fail "iptables is missing; installing it needs root (or sudo)"
    sudo_cmd=(sudo -n)
fi

install_iptables() {
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends iptables \
        >/dev/null
}

echo "install-net-tools: installing Debian's iptables package"
if ! install_iptables; then
    "${sudo_cmd[@]}" apt-get update -qq >/dev/null || fail "apt-get update failed"
    install_iptables || fail "apt-get could not install iptables"
fi
have_iptables || fail "the iptables package was installed but no iptables command is there"
echo "install-net-tools: iptables installed ($(PATH="$PATH:/usr/sbin:/sbin" iptables --version))"
