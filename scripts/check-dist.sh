#!/usr/bin/env bash
# Builds the sdist and the wheel (python -m build) and proves that both work outside the work tree:
#
#   Python 3.12: the wheel (its C accelerator compiled) with the test extra in a fresh venv;
#   Python 3.13: the sdist built again with the compiler refused (CC=/nonexistent), so on pure Python.
#
# In each: `rmq --version` must name the expected codec path, `rmq quickstart` must run, and the unit tests
# (a fast subset: FAST_UNIT below, less SLOW_UNIT and SLOW_DESELECT) plus a few python-provider integration
# modules (send, pull, admin against the project's servers)
# run from a copy of tests/ in a temporary folder, with RMQ_TEST_INSTALLED set, so that tests/conftest.py
# refuses to run unless every package is imported from the venv's site-packages.
# (Python 3.11 is the main suite's interpreter, with the editable install.)
#
# CI time is scarce: the two installs, and then the two versions' checks, run side by side; pip reuses its
# cache and byte-compiles nothing up front; each part's wall time is printed at the end. Where an interpreter
# is missing, the check skips saying so; in CI (CI=true or ROCKETMQ_REQUIRE_PEERS=1) it fails instead.
set -euo pipefail
cd "$(dirname "$0")/.."
readonly ROOT="$PWD"
readonly DIST_NAME="rocketmq-toolkit"
# Apache's captured frames (tests/golden.py): beside the work tree unless the caller says where.
export RMQ_GOLDEN_DIR="${RMQ_GOLDEN_DIR:-$(dirname "$ROOT")/shared/golden}"
readonly PACKAGES=(
    rocketmq_wire client producer consumer admin nameserver broker spark_connector cli rocketmq_testing
)
# The integration modules run on 3.12 and 3.13: the project's servers only, a few seconds each (the CLI's
# path is `rmq quickstart` itself: servers, topic, send, pull, consumer progress and route tables).
readonly IT_MODULES=(
    tests/integration/test_cluster_producer.py
    tests/integration/test_cluster_admin.py
    tests/integration/test_consumer_pull.py
)
# The unit test modules run on 3.12/3.13 (3.11 runs them all): what differs between interpreters and
# between the two codec paths, or depends on how the package was installed. That is the codec (frames,
# headers, bodies, message encoding, against Apache's captured bytes), the C accelerator's agreement with
# the pure-Python path, the store's files, the transport, one send and pull through the broker, `rmq
# --version` and the pytest plugin's import. Globs, so a new golden or message test joins by its name.
# The rest (about 900 tests more) starts servers or rmq processes per test and reaches the same byte-level
# code; it added a minute and a half of CI, before the main suite, for each version.
readonly FAST_UNIT=(
    'test_*golden*' test_golden_frames test_command test_framing test_codec_fuzz test_codes test_javahash
    test_speedups test_hostile_input 'test_message_*' test_bodies_collections test_pop_headers
    test_store_files test_store_flush test_store_faults test_transport_roundtrip test_transport_tls
    test_broker_send_pull test_producer_send test_cli_version test_pytest_plugin_import
)
# test_message_batch is the one slow module the globs take in (its round trips run thousands of examples).
readonly SLOW_UNIT=(test_message_batch)
# ... and test_speedups' slowest: its other-path rerun of the codec's tests and its longest generated inputs.
readonly SLOW_DESELECT=(
    tests/unit/test_speedups.py::test_codec_tests_pass_on_the_other_path
    tests/unit/test_speedups.py::test_json_reader_agrees_on_damaged_java_layout
    tests/unit/test_speedups.py::test_generated_commands_encode_and_decode_alike
    tests/unit/test_speedups.py::test_from_ext_and_render_alike
    tests/unit/test_speedups.py::test_encode_entries_alike
    tests/unit/test_speedups.py::test_json_reader_agrees_on_java_layout
)

work="$(mktemp -d -t rmq-dist-XXXXXX)"
cleanup() { rm -rf "$work"; }
trap cleanup EXIT

timings=()
started=$SECONDS
lap() { # lap LABEL: records the seconds since the previous lap
    timings+=("$(printf '%4ds  %s' $((SECONDS - started)) "$1")")
    started=$SECONDS
}

required() { [[ "${CI:-}" == "true" || -n "${ROCKETMQ_REQUIRE_PEERS:-}" ]]; }

fail() {
    echo "check-dist: $*" >&2
    exit 1
}

# find_python 3.12: an interpreter of that version (pyenv's shims answer only for the selected versions, so
# pyenv's own folder is looked in too); prints nothing when there is none.
find_python() {
    local version="$1" candidate
    local pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
    for candidate in "python$version" "$pyenv_root"/versions/"$version".*/bin/"python$version"; do
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; print(sys.executable)' 2>/dev/null; then
            return 0
        fi
    done
}

py312="$(find_python 3.12)"
py313="$(find_python 3.13)"
for pair in "3.12:$py312" "3.13:$py313"; do
    if [[ -z "${pair#*:}" ]]; then
        required && fail "no Python ${pair%%:*} on PATH or under pyenv: the distribution cannot be checked"
        echo "check-dist: SKIPPED, no Python ${pair%%:*} on PATH or under pyenv"
        exit 0
    fi
done

echo "== dist: venvs for Python 3.12 ($py312) and 3.13 ($py313)"
"$py312" -m venv "$work/py312" &
venv312=$!
"$py313" -m venv "$work/py313" &
venv313=$!
wait "$venv312" || fail "python3.12 -m venv failed"
wait "$venv313" || fail "python3.13 -m venv failed"
lap "two venvs"

echo "== dist: python -m build"
# The build requirements (pyproject.toml's [build-system]) go into this venv once, instead of into two
# throw-away ones (--no-isolation; build still refuses to run when one is missing); the 3.13 install below
# builds from the sdist in pip's isolated environment, as users' pip does.
read_requires='import sys, tomllib
print(*tomllib.load(sys.stdin.buffer)["build-system"]["requires"], sep="\n")'
mapfile -t build_requires < <("$py312" -c "$read_requires" <pyproject.toml)
"$work/py312/bin/pip" install -q build "${build_requires[@]}"
"$work/py312/bin/python" -m build --no-isolation --outdir "$work/dist" "$ROOT" >"$work/build.log" 2>&1 ||
    { tail -50 "$work/build.log"; fail "python -m build failed (log above)"; }
lap "python -m build (sdist, then the cp312 wheel from it)"
grep -F "rocketmq-toolkit: built the C accelerator" "$work/build.log" ||
    fail "the wheel's build did not compile the C accelerator (log: $(tail -20 "$work/build.log"))"
sdist="$(echo "$work"/dist/*.tar.gz)"
wheel="$(echo "$work"/dist/*.whl)"
[[ -f "$sdist" && -f "$wheel" ]] || fail "python -m build made no sdist or no wheel: $(ls "$work/dist")"

# What each archive must hold: every package's py.typed, and the compiled module (wheel) or its C source.
"$work/py312/bin/python" - "$wheel" "$sdist" "${PACKAGES[@]}" <<'EOF' || fail "an archive lacks a file"
import os
import sys
import tarfile
import zipfile

wheel, sdist, *packages = sys.argv[1:]
in_wheel = zipfile.ZipFile(wheel).namelist()
in_sdist = [name.split("/", 1)[1] for name in tarfile.open(sdist).getnames() if "/" in name]
missing = [f"wheel: {p}/py.typed" for p in packages if f"{p}/py.typed" not in in_wheel]
missing += [f"sdist: {p}/py.typed" for p in packages if f"{p}/py.typed" not in in_sdist]
if not any(n.startswith("rocketmq_wire/_speedups.") and n.endswith(".so") for n in in_wheel):
    missing.append("wheel: rocketmq_wire/_speedups.*.so")
sdist_needs = ("rocketmq_wire/_speedups.c", "setup.py", "pyproject.toml", "README.md", "docs/ARCHITECTURE.md")
for needed in sdist_needs:
    if needed not in in_sdist:
        missing.append(f"sdist: {needed}")
modules = sum(n.endswith(".py") for n in in_wheel)
print(
    f"wheel {os.path.basename(wheel)}: {os.path.getsize(wheel) / 1024:.0f} KiB, {len(in_wheel)} files "
    f"({modules} modules, {len(packages)} packages with py.typed, the C accelerator)"
)
print(f"sdist {os.path.basename(sdist)}: {os.path.getsize(sdist) / 1024:.0f} KiB, {len(in_sdist)} entries")
for line in missing:
    print(f"missing from the {line}", file=sys.stderr)
sys.exit(1 if missing else 0)
EOF
lap "archive contents"

echo "== dist: installs (3.12: the wheel; 3.13: the sdist with the compiler refused)"
# --no-compile: pip would byte-compile every installed module (mypy's thousands among them) up front; the
# tests compile only what they import. --no-binary: never a wheel of ours cached from a compiling build.
"$work/py312/bin/pip" install -q --no-compile "$wheel[test]" >"$work/install312.log" 2>&1 &
install312=$!
CC=/nonexistent "$work/py313/bin/pip" install -v --no-compile --no-binary "$DIST_NAME" "$sdist[test]" \
    >"$work/install313.log" 2>&1 &
install313=$!
wait "$install312" || { tail -30 "$work/install312.log"; fail "installing the wheel on 3.12 failed"; }
wait "$install313" || { tail -30 "$work/install313.log"; fail "installing the sdist on 3.13 failed"; }
lap "both installs, side by side"
# setup.py's own words, from pip's build log: the install went on without the accelerator.
grep -F "rocketmq-toolkit: the C accelerator rocketmq_wire._speedups was not built" "$work/install313.log" ||
    fail "the 3.13 build log does not say the accelerator was left out (CC was refused)"

# The tests run from a copy, so that nothing of the work tree is on sys.path (pyproject.toml for pytest's
# settings only: the packages are not copied).
mkdir "$work/suite"
cp -r tests pyproject.toml "$work/suite/"
find "$work/suite" -name __pycache__ -prune -exec rm -rf {} +

chosen=()
for pattern in "${FAST_UNIT[@]}"; do
    for path in tests/unit/$pattern.py; do
        [[ -f "$path" ]] || fail "FAST_UNIT names $pattern, which matches no module in tests/unit"
        [[ " ${SLOW_UNIT[*]} " == *" $(basename "$path" .py) "* ]] && continue
        [[ " ${chosen[*]} " == *" $path "* ]] || chosen+=("$path")
    done
done
left_out=()
for test in "${SLOW_DESELECT[@]}"; do
    left_out+=(--deselect "$test")
done

# check_venv NAME EXPECTED_CODEC: rmq --version, rmq quickstart, then the tests, in the venv NAME. Both
# versions run side by side, one pytest process each: while one waits (servers starting, an rmq process),
# the other computes, and neither ends on a single straggling worker as two xdist workers each would.
check_venv() {
    local venv="$work/$1" expected="$2" version began=$SECONDS
    version="$("$venv/bin/rmq" --version)"
    echo "$version"
    grep -q "^codec: $expected" <<<"$version" || fail "$1: rmq --version does not say '$expected'"
    (cd "$work" && "$venv/bin/rmq" quickstart --messages 3 >"$work/quickstart-$1.log" 2>&1) ||
        { cat "$work/quickstart-$1.log"; fail "$1: rmq quickstart failed"; }
    echo "$1: rmq --version and rmq quickstart took $((SECONDS - began)) s"
    began=$SECONDS
    (cd "$work/suite" && RMQ_TEST_INSTALLED=1 ROCKETMQ_PROVIDERS=python "$venv/bin/python" -m pytest -q \
        -p no:cacheprovider -n 0 -rs --durations=5 "${left_out[@]}" "${chosen[@]}" "${IT_MODULES[@]}") ||
        fail "$1: the tests failed against the installed package"
    echo "$1: the tests took $((SECONDS - began)) s"
}

echo "== dist: Python 3.12 (the wheel) and 3.13 (the sdist without a compiler), side by side"
check_venv py312 "C accelerator" >"$work/check-py312.log" 2>&1 &
check312=$!
check_venv py313 "pure Python" >"$work/check-py313.log" 2>&1 &
check313=$!
status=0
wait "$check312" || status=1
wait "$check313" || status=1
lap "Python 3.12 and 3.13: rmq --version, rmq quickstart, the tests"
for version in py312 py313; do
    echo "-- $version"
    cat "$work/check-$version.log"
done
((status == 0)) || fail "a check against an installed package failed (logs above)"

echo "== dist: seconds per part"
printf '%s\n' "${timings[@]}"
