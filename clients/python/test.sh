#!/usr/bin/env bash
# Runs the Python client's tests against a local `amulet dev` cluster the
# tests start themselves (fresh temp dir, memory storage, ports in
# 22000-22990, stopped at the end).
#
#   clients/python/test.sh [pytest args...]
#
# Needs CPython >= 3.11 (python3.11, else python3; or set PYTHON) with
# venv and pip, and the amulet binary: $AMULET_BIN, by default
# <repo>/target/release/amulet (build it first: cargo build --release -p amulet).
#
# The first run creates clients/python/.venv, installs the pinned packages
# of requirements-test.txt and the client itself (`pip install -e .`,
# which generates the protobuf messages from proto/amulet/v1/amulet.proto
# into src/amulet/v1/). Later runs reinstall only when one of those inputs
# changed, so they go straight to pytest.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="$HERE/.venv"
export AMULET_BIN="${AMULET_BIN:-$REPO/target/release/amulet}"

if [[ ! -x "$AMULET_BIN" ]]; then
    echo "test.sh: no amulet binary at $AMULET_BIN (cargo build --release -p amulet, or set AMULET_BIN)" >&2
    exit 2
fi

if [[ -z "${PYTHON:-}" ]]; then
    if command -v python3.11 >/dev/null 2>&1; then PYTHON=python3.11; else PYTHON=python3; fi
fi

if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || { echo "test.sh: $PYTHON is older than 3.11" >&2; exit 2; }
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
fi

# Everything the installed environment depends on; reinstall when it changes.
stamp_of() {
    cat "$HERE/requirements-test.txt" "$HERE/pyproject.toml" "$HERE/setup.py" \
        "$REPO/proto/amulet/v1/amulet.proto" | sha256sum | cut -d' ' -f1
}
STAMP_FILE="$VENV/.amulet-test-stamp"
if [[ "$(cat "$STAMP_FILE" 2>/dev/null)" != "$(stamp_of)" ]] \
    || [[ ! -f "$HERE/src/amulet/v1/amulet_pb2.py" ]]; then
    echo "test.sh: installing into $VENV" >&2
    rm -f "$STAMP_FILE"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$HERE/requirements-test.txt"
    # Without build isolation: the build requirements are pinned above, and
    # the editable build regenerates src/amulet/v1/ from the proto.
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        --no-build-isolation --no-deps -e "$HERE"
    stamp_of >"$STAMP_FILE"
fi

cd "$HERE"
exec "$VENV/bin/python" -m pytest -p no:cacheprovider "$@"
