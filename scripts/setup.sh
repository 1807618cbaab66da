#!/usr/bin/env bash
# Installs what the project's tests and benchmarks need from the system (apt
# packages, toolchain components): each file in scripts/setup.d covers one part,
# installs as root and warns otherwise. Idempotent: what is there is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
for setup in scripts/setup.d/*.sh; do
    bash "$setup" || echo "warning: $setup could not install everything" >&2
done
