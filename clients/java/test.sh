#!/usr/bin/env bash
# Builds the Java client and runs every Java test (tuple vectors, a live
# local cluster for behaviour, Guava testlib and conformance tests, the
# YCSB binding). Needs Java 17+ and Maven 3.8+; the amulet binary is
# $AMULET_BIN (default <repo>/target/release/amulet; not built here).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export AMULET_BIN="${AMULET_BIN:-$repo/target/release/amulet}"
if [ ! -x "$AMULET_BIN" ]; then
  echo "test.sh: no amulet binary at $AMULET_BIN" >&2
  echo "  build it with: cargo build --release -p amulet   (or set AMULET_BIN)" >&2
  exit 1
fi
cd "$here"
mvn -q -B verify "$@"
