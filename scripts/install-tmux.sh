#!/usr/bin/env bash
# Installs what the `rmq top` terminal test (tests/unit/test_cli_top.py) needs from the system: Debian's
# tmux package, a real terminal whose screen the test reads back.
set -euo pipefail
exec "$(dirname "$0")/apt-install.sh" tmux tmux
