#!/usr/bin/env bash
# The end-to-end tests build network namespaces and veth pairs and run iperf3
# through them: they need root, iproute2, iperf3, ethtool and ping.
set -euo pipefail
source "$(dirname "$0")/../lib/apt.sh"
need_tools ip:iproute2 iperf3:iperf3 ethtool:ethtool ping:iputils-ping
