#!/usr/bin/env bash
# Ten consecutive runs of the PSPAT throughput sweep, then how far the runs'
# medians are apart for each client count and architecture: the check that PSPAT
# gives the same figures run after run (within 10% on an idle machine).
#
#   bash scripts/pspat-ten-runs.sh                # builds, runs, summarises
#   RUNS=5 CLIENTS=1,8 bash scripts/pspat-ten-runs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-10}"
clients="${CLIENTS:-1,4,32}"
cargo build --release -p eiffel-cli --quiet
out="$(mktemp -d)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do
    ./target/release/eiffel bench pspat --quick --cases throughput --clients "$clients" \
        >"$out/run$i.txt" 2>"$out/run$i.err"
    echo "run $i done, load $(cut -d' ' -f1 /proc/loadavg)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# Table columns: clients, pspat Mdps, ±, aggr Mpps, ±, aggr Mdps, locked Mdps, ±,
# batched, ±, pspat/locked, rtt ns.
cat "$out"/run*.txt | awk '
    $1 ~ /^[0-9]+$/ && NF >= 12 {
        n = $1
        pspat[n] = pspat[n] " " $2; aggr[n] = aggr[n] " " $4
        locked[n] = locked[n] " " $7; ratio[n] = ratio[n] " " $11; rtt[n] = rtt[n] " " $12
        seen[n] = 1
    }
    function stats(list,    a, k, i, j, t, lo, hi, med) {
        k = split(list, a, " ")
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        lo = a[1]; hi = a[k]; med = (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
        return sprintf("%7.2f %7.2f %7.2f %5.0f%%", lo, med, hi, med > 0 ? (hi - lo) / med * 100 : 0)
    }
    END {
        printf "%-7s %-14s %7s %7s %7s %6s\n", "clients", "figure", "min", "median", "max", "spread"
        for (n in seen) {
            printf "%-7s %-14s %s\n", n, "pspat Mdps", stats(pspat[n])
            printf "%-7s %-14s %s\n", n, "aggr Mpps", stats(aggr[n])
            printf "%-7s %-14s %s\n", n, "locked Mdps", stats(locked[n])
            printf "%-7s %-14s %s\n", n, "pspat/locked", stats(ratio[n])
            printf "%-7s %-14s %s\n", n, "rtt ns", stats(rtt[n])
        }
    }' | sort -n -k1,1 -s
echo "(spread: (max - min) / median over the $runs runs' medians; raw output in $out)"
