#!/usr/bin/env bash
# Stops a dockerd that scripts/ensure-docker.sh started, by the pid in its pid file, and checks it is gone
# (with the containerd it runs).
#
#   scripts/stop-docker.sh PIDFILE
#
# SIGTERM first (dockerd stops its containers and its containerd), SIGKILL after $DOCKERD_STOP_S (default
# 30) seconds. Exits 0 once no process of the pid file's dockerd is left; non-zero with one line saying why
# otherwise. A pid file whose process is gone (or is not dockerd: the pid was reused) is only removed.
set -euo pipefail

readonly STOP_S="${DOCKERD_STOP_S:-30}"

say() {
    echo "stop-docker: $*" >&2
}

fail() {
    say "$*"
    exit 1
}

(($# == 1)) || fail "usage: $0 PIDFILE"
readonly PIDFILE="$1"
[[ -r "$PIDFILE" ]] || fail "no pid file $PIDFILE"
pid="$(tr -d '[:space:]' <"$PIDFILE")"
[[ "$pid" =~ ^[0-9]+$ ]] || fail "$PIDFILE holds no pid: '$pid'"

if [[ ! -d "/proc/$pid" ]] || [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" != dockerd ]]; then
    say "no dockerd runs as pid $pid any more; removing $PIDFILE"
    rm -f "$PIDFILE"
    exit 0
fi

# Its children (the containerd it manages, shims) are checked gone as well.
children="$(ps -o pid= --ppid "$pid" 2>/dev/null | tr -s ' \n' ' ' || true)"

gone() {
    local p
    for p in "$pid" $children; do
        # A zombie has exited; only its parent's wait is missing.
        if [[ -d "/proc/$p" ]] && [[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ]]; then
            return 1
        fi
    done
    return 0
}

wait_gone() {
    local deadline=$((SECONDS + $1))
    until gone; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

kill -TERM "$pid" 2>/dev/null || true
if ! wait_gone "$STOP_S"; then
    say "dockerd (pid $pid) still runs $STOP_S s after SIGTERM; sending SIGKILL"
    for p in "$pid" $children; do
        kill -KILL "$p" 2>/dev/null || true
    done
    wait_gone 10 || fail "dockerd (pid $pid) or its children ($children) still exist after SIGKILL"
fi
rm -f "$PIDFILE"
say "dockerd (pid $pid) stopped"
