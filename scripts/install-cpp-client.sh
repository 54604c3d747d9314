#!/usr/bin/env bash
# Installs Apache's C++ RocketMQ client (PyPI "rocketmq", the ctypes binding of rocketmq-client-cpp) into
# ./.venv, for the integration tests that use it as an independent peer.
#
# Why a separate script: the wheel is x86_64-Linux only and must never become a dependency of the project
# itself (its import name "rocketmq" is the peer's, not ours). The wheel ships librocketmq.so with boost,
# libevent, jsoncpp and zlib linked in; the only system libraries it needs beyond glibc are libstdc++.so.6
# and libgcc_s.so.1, present on every Debian with apt. They are installed from Debian only when missing.
#
# Idempotent: when the pinned version already imports, it exits 0 within a second without touching anything.
# Exits non-zero with a message saying what is missing when it cannot install.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly PIN="rocketmq==0.4.4"
readonly VERSION="${PIN#*==}"
readonly VENV=".venv"
readonly PY="$VENV/bin/python"

fail() {
    echo "install-cpp-client: $*" >&2
    exit 1
}

# Imports the binding's client module (which loads librocketmq.so) and checks the pinned version.
check_installed() {
    "$PY" - "$VERSION" <<'EOF' 2>/dev/null
import importlib.metadata
import sys

if importlib.metadata.version("rocketmq") != sys.argv[1]:
    sys.exit(1)
import rocketmq.client  # noqa: F401  (loads the native library)
EOF
}

if [[ -x "$PY" ]] && check_installed; then
    echo "install-cpp-client: $PIN already installed in $VENV"
    exit 0
fi

[[ "$(uname -s)" == "Linux" ]] || fail "PyPI's $PIN only has a Linux x86_64 wheel here; this is $(uname -s)"
[[ "$(uname -m)" == "x86_64" ]] || fail "PyPI's $PIN only has a manylinux1_x86_64 wheel; this machine is $(uname -m)"

if [[ ! -x "$PY" ]]; then
    command -v python3 >/dev/null || fail "python3 not found (need Python 3.11 to create $VENV)"
    python3 -m venv "$VENV" || fail "could not create $VENV with python3 -m venv (Debian: apt-get install python3-venv)"
fi

# --only-binary: the sdist would try to build rocketmq-client-cpp, which needs downloads this machine cannot make.
"$PY" -m pip install -q --disable-pip-version-check --only-binary=:all: "$PIN" \
    || fail "pip could not install $PIN from PyPI"

site_pkgs="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
lib="$site_pkgs/rocketmq/librocketmq.so"
[[ -f "$lib" ]] || fail "the $PIN wheel did not install $lib"

# Debian packages for the shared libraries the native library cannot find, if any.
missing_pkgs=()
if command -v ldd >/dev/null; then
    while read -r soname; do
        case "$soname" in
            libstdc++.so.6) missing_pkgs+=(libstdc++6) ;;
            libgcc_s.so.1) missing_pkgs+=(libgcc-s1) ;;
            *) fail "librocketmq.so needs $soname, which is not installed and has no known Debian package here" ;;
        esac
    done < <(ldd "$lib" | awk '/not found/ {print $1}')
fi
if ((${#missing_pkgs[@]})); then
    command -v apt-get >/dev/null || fail "librocketmq.so needs ${missing_pkgs[*]} and there is no apt-get to install them"
    sudo_cmd=()
    [[ "$(id -u)" == 0 ]] || sudo_cmd=(sudo)
    echo "install-cpp-client: installing Debian packages ${missing_pkgs[*]}"
    "${sudo_cmd[@]}" apt-get update -qq || fail "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing_pkgs[@]}" \
        || fail "apt-get could not install ${missing_pkgs[*]}"
fi

if ! check_installed; then
    "$PY" -c 'import rocketmq.client' >&2 || true
    fail "$PIN is installed but 'import rocketmq.client' fails in $VENV (see the error above)"
fi
echo "install-cpp-client: $PIN installed in $VENV ($lib)"
