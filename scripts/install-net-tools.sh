#!/usr/bin/env bash
# Installs what the network-fault integration test (tests/integration/test_network_faults.py) needs from the
# system: Debian's iptables package. The test cuts a broker off with iptables rules inside a network
# namespace of its own (unshare --net, from util-linux, which every Debian has), so nothing outside it is
# touched. Toxiproxy, the other tool it uses, is built by the test itself from the Go module proxy.
set -euo pipefail
[[ "$(uname -s)" == "Linux" ]] || { echo "install-net-tools: iptables and network namespaces are Linux only" >&2; exit 1; }
exec "$(dirname "$0")/apt-install.sh" iptables iptables
