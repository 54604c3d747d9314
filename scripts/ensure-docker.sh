#!/usr/bin/env bash
# Makes sure a Docker engine answers, for the integration suite's `docker` provider (Apache RocketMQ in
# containers built locally: no registry is ever used).
#
#   scripts/ensure-docker.sh [RUN_DIR]
#
# * An engine already answers (`docker info`): says so and exits 0; nothing is started.
# * Else, as root on Debian: installs docker.io with apt when dockerd is missing, starts dockerd in the
#   background (its log RUN_DIR/dockerd.log, its pid file RUN_DIR/dockerd.pid), waits (at most
#   $DOCKERD_WAIT_S, default 60 s) until `docker info` answers and prints dockerd's pid on stdout.
#   scripts/stop-docker.sh RUN_DIR/dockerd.pid stops it again.
# * Otherwise exits non-zero with one line on stderr saying why (not root, no apt, dockerd died: its log's
#   tail).
#
# RUN_DIR defaults to $RMQ_IT_CACHE/dockerd (else ~/.cache/rocketmq-toolkit-it/dockerd). The suite's containers
# all use host networking, so dockerd runs without a bridge or iptables rules: it creates no interface on a
# private range and touches no firewall. $DOCKERD_EXTRA_ARGS is appended to its command line (e.g. another
# -H/--data-root/--exec-root to run a second engine beside one that exists).
set -euo pipefail

readonly WAIT_S="${DOCKERD_WAIT_S:-60}"
readonly RUN_DIR="${1:-${RMQ_IT_CACHE:-$HOME/.cache/rocketmq-toolkit-it}/dockerd}"

say() {
    echo "ensure-docker: $*" >&2
}

fail() {
    say "$*"
    exit 1
}

engine_answers() {
    command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1
}

if engine_answers; then
    say "a Docker engine already answers at ${DOCKER_HOST:-unix:///var/run/docker.sock}; nothing to start"
    exit 0
fi

[[ "$(id -u)" == 0 ]] || fail "no Docker engine answers and starting one needs root (running as $(id -un))"
[[ -r /etc/debian_version ]] && command -v apt-get >/dev/null 2>&1 ||
    fail "no Docker engine answers and this is not Debian with apt-get: install and start Docker yourself"

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    say "installing docker.io with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt_log="$(mktemp)"
    if ! apt-get install -y -q --no-install-recommends docker.io >"$apt_log" 2>&1; then
        apt-get update -q >>"$apt_log" 2>&1 || true
        apt-get install -y -q --no-install-recommends docker.io >>"$apt_log" 2>&1 ||
            fail "apt-get install docker.io failed: $(tail -n 3 "$apt_log" | tr '\n' ' ')"
    fi
    rm -f "$apt_log"
    command -v dockerd >/dev/null 2>&1 || fail "docker.io is installed but there is no dockerd on PATH"
    # The package may have started an engine through the init system.
    if engine_answers; then
        say "docker.io installed; its service answers already; nothing else started"
        exit 0
    fi
fi

mkdir -p "$RUN_DIR"
readonly LOG="$RUN_DIR/dockerd.log"
readonly PIDFILE="$RUN_DIR/dockerd.pid"
if [[ -s "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    fail "a dockerd started earlier (pid $(cat "$PIDFILE"), $PIDFILE) runs but does not answer; see $LOG"
fi
rm -f "$PIDFILE"

host_args=()
if [[ "${DOCKER_HOST:-}" == unix://* ]]; then
    host_args=(-H "$DOCKER_HOST")
elif [[ -n "${DOCKER_HOST:-}" ]]; then
    fail "DOCKER_HOST=$DOCKER_HOST answers nothing and is not a local socket this script could start"
fi
# shellcheck disable=SC2206 # word splitting of the extra arguments is intended
extra_args=(${DOCKERD_EXTRA_ARGS:-})

# setsid: a session of its own, so the engine outlives this script and a Ctrl-C of the caller.
setsid dockerd --bridge=none --iptables=false --pidfile "$PIDFILE" "${host_args[@]}" "${extra_args[@]}" \
    </dev/null >"$LOG" 2>&1 &
pid=$!

deadline=$((SECONDS + WAIT_S))
until engine_answers; do
    if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid" 2>/dev/null || true
        fail "dockerd exited at start-up: $(tail -n 3 "$LOG" | tr '\n' ' ')"
    fi
    if ((SECONDS >= deadline)); then
        kill -TERM "$pid" 2>/dev/null || true
        fail "dockerd (pid $pid) did not answer within $WAIT_S s (stopped it): $(tail -n 3 "$LOG" | tr '\n' ' ')"
    fi
    sleep 0.5
done

say "dockerd started (pid $pid, log $LOG, pid file $PIDFILE); stop it with scripts/stop-docker.sh $PIDFILE"
echo "$pid"
