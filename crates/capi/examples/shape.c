/*
 * Eiffel from C: load a policy file, classify frames, schedule them on a
 * 100 Mbit/s link in virtual time, print what left and the counters.
 *
 *   cargo build --release -p eiffel-capi
 *   cc -O2 -I "$(dirname "$(find target/release/build -name eiffel.h | head -1)")" \
 *      crates/capi/examples/shape.c target/release/libeiffel_capi.a -lpthread -ldl -lm -o shape
 *   ./shape examples/policies/live-uplink.toml
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "eiffel.h"

/* An Ethernet + IPv4 + UDP frame of `len` bytes from 10.<tenant>.0.<host> with DSCP `dscp`. */
static size_t udp_frame(uint8_t *f, size_t len, uint8_t tenant, uint8_t host, uint8_t dscp) {
    memset(f, 0, len);
    f[12] = 0x08; /* EtherType IPv4 */
    uint8_t *ip = f + 14;
    size_t ip_len = len - 14;
    ip[0] = 0x45;
    ip[1] = (uint8_t)(dscp << 2);
    ip[2] = (uint8_t)(ip_len >> 8);
    ip[3] = (uint8_t)ip_len;
    ip[8] = 64;
    ip[9] = 17; /* UDP */
    ip[12] = 10, ip[13] = tenant, ip[14] = 0, ip[15] = host;
    ip[16] = 10, ip[17] = 9, ip[18] = 9, ip[19] = 9;
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    ip[10] = (uint8_t)(~sum >> 8), ip[11] = (uint8_t)~sum;
    uint8_t *udp = ip + 20;
    size_t udp_len = ip_len - 20;
    udp[0] = 0x13, udp[1] = 0x88, udp[2] = 0x13, udp[3] = 0x89;
    udp[4] = (uint8_t)(udp_len >> 8), udp[5] = (uint8_t)udp_len;
    return len;
}

static int check(EiffelStatus s, const char *what) {
    if (s != EIFFEL_STATUS_OK) {
        fprintf(stderr, "%s: status %d: %s\n", what, (int)s, eiffel_last_error());
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s POLICY.toml\n", argv[0]);
        return 2;
    }
    EiffelScheduler *bad = NULL;
    if (eiffel_scheduler_load("no/such/policy.toml", &bad) == EIFFEL_STATUS_POLICY)
        printf("a missing file is an error: %s\n", eiffel_last_error());

    EiffelScheduler *s = NULL;
    if (check(eiffel_scheduler_load(argv[1], &s), argv[1])) return 1;
    printf("eiffel %s: %s, %zu nodes\n", eiffel_version(), argv[1], eiffel_scheduler_node_count(s));

    /* 100 ms of arrivals: voice (DSCP EF) at 30 Mbit/s, tenants A and B at 80 each,
     * into a 100 Mbit/s link; the link sends one 1000-byte frame every 80 us. */
    const uint64_t link_bps = 100000000, end = 100000000;
    const struct { uint8_t tenant, host, dscp; uint64_t gap_ns; } src[3] = {
        {0, 9, 46, 266667}, {1, 1, 0, 100000}, {2, 1, 0, 100000}};
    uint64_t next[3] = {0, 1000, 2000}, free_at = 0, sent_bytes = 0;
    uint32_t buffer = 0;
    uint8_t frame[1000];
    EiffelPacket pkt;
    EiffelDrop drop;
    uint64_t drops_seen = 0;
    for (;;) {
        int k = 0;
        for (int i = 1; i < 3; i++) if (next[i] < next[k]) k = i;
        uint64_t now = next[k] < free_at ? next[k] : free_at;
        if (now >= end) break;
        if (next[k] <= free_at) {
            size_t len = udp_frame(frame, sizeof frame, src[k].tenant, src[k].host, src[k].dscp);
            if (check(eiffel_scheduler_classify(s, frame, len, now, &pkt), "classify")) return 1;
            pkt.buffer = buffer++;
            EiffelStatus st = eiffel_scheduler_enqueue(s, &pkt, now, &drop);
            if (st == EIFFEL_STATUS_DROPPED) drops_seen++;
            else if (check(st, "enqueue")) return 1;
            next[k] += src[k].gap_ns;
            continue;
        }
        EiffelStatus st = eiffel_scheduler_dequeue(s, now, &pkt);
        if (st == EIFFEL_STATUS_OK) {
            sent_bytes += pkt.len;
            free_at = now + (uint64_t)pkt.len * 8 * 1000000000 / link_bps;
        } else {
            uint64_t at;
            uint64_t arrival = next[0] < next[1] ? next[0] : next[1];
            if (next[2] < arrival) arrival = next[2];
            free_at = eiffel_scheduler_next_ready(s, now, &at) == EIFFEL_STATUS_OK && at < arrival ? at : arrival;
        }
    }
    printf("sent %" PRIu64 " bytes in %" PRIu64 " ms (%.1f Mbit/s)\n", sent_bytes, end / 1000000,
           sent_bytes * 8.0 / (end / 1e9) / 1e6);

    EiffelCounters c;
    if (check(eiffel_scheduler_counters(s, &c), "counters")) return 1;
    printf("totals: %" PRIu64 " enqueued = %" PRIu64 " dequeued + %" PRIu64 " dropped + %" PRIu64 " queued\n",
           c.enqueued, c.dequeued, c.dropped, c.backlog_packets);
    int ok = c.enqueued == c.dequeued + c.dropped + c.backlog_packets && c.dropped == drops_seen;
    for (size_t i = 0; i < eiffel_scheduler_node_count(s); i++) {
        EiffelCounters n;
        if (check(eiffel_scheduler_node_counters(s, i, &n), "node counters")) return 1;
        printf("node %-24s sent %6" PRIu64 " pkt %9" PRIu64 " bytes, dropped %4" PRIu64, eiffel_scheduler_node_path(s, i),
               n.dequeued, n.dequeued_bytes, n.dropped);
        for (uint32_t r = 0; r < EIFFEL_DROP_REASONS; r++)
            if (n.dropped_packets[r]) printf(" (%s %" PRIu64 ")", eiffel_drop_reason_name(r), n.dropped_packets[r]);
        printf(", queued %" PRIu64 "\n", n.backlog_packets);
        ok &= n.enqueued == n.dequeued + n.dropped + n.backlog_packets;
    }
    eiffel_scheduler_free(s);
    printf(ok ? "every packet accounted for\n" : "ACCOUNTING MISMATCH\n");
    return ok ? 0 : 1;
}
