#!/usr/bin/env bash
# The C API's test compiles the C example against the generated header and the
# static and shared libraries: it needs a C compiler.
set -euo pipefail
source "$(dirname "$0")/../lib/apt.sh"
need_tools cc:gcc
