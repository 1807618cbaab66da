#!/usr/bin/env bash
# `eiffel shape --io af_xdp` (the default where it works): eiffel-net builds its
# AF_XDP data path against Debian's libxdp and libbpf (pkg-config, a C shim over
# <xdp/xsk.h> compiled with cc); libxdp1 ships the default XSK program it loads.
set -euo pipefail
source "$(dirname "$0")/../lib/apt.sh"
apt_install libxdp-dev libbpf-dev pkg-config
