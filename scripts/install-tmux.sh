#!/usr/bin/env bash
# Installs what the `rmq top` terminal test (tests/unit/test_cli_top.py) needs from the system: Debian's
# tmux package, a real terminal whose screen the test reads back.
#
# Idempotent and quiet: exits 0 at once when tmux is already there. apt-get update runs only when a first
# install attempt fails (a stale or empty package index). Exits non-zero, saying why, when it cannot
# install; the test then skips with that reason (fails in CI, where ROCKETMQ_REQUIRE_PEERS is set).
set -euo pipefail

fail() {
    echo "install-tmux: $*" >&2
    exit 1
}

if command -v tmux >/dev/null; then
    exit 0
fi

[[ "$(uname -s)" == "Linux" ]] || fail "tmux is missing and only Debian's package is installed here; this is $(uname -s)"
command -v apt-get >/dev/null || fail "tmux is missing and there is no apt-get to install it (not Debian?)"
sudo_cmd=()
if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || fail "tmux is missing; installing it needs root (or sudo)"
    sudo_cmd=(sudo -n)
fi

install_tmux() {
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends tmux >/dev/null
}

echo "install-tmux: installing Debian's tmux package"
if ! install_tmux; then
    "${sudo_cmd[@]}" apt-get update -qq >/dev/null || fail "apt-get update failed"
    install_tmux || fail "apt-get install tmux failed"
fi
command -v tmux >/dev/null || fail "tmux still missing after installing it"
