/* Out-of-line wrappers for the DPDK functions and macros the Rust side needs
 * that exist only as static inline functions or macros in DPDK's headers. */
#ifndef EIFFEL_DPDK_SHIM_H
#define EIFFEL_DPDK_SHIM_H

#include <stdint.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_sched.h>

/* rte_pktmbuf_alloc_bulk: 0 on success, a negative errno when the pool is short. */
int eiffel_dpdk_mbuf_alloc_bulk(struct rte_mempool *pool, struct rte_mbuf **mbufs, unsigned int count);

/* Sets an mbuf's packet and segment length (what rte_sched reads). */
void eiffel_dpdk_mbuf_set_len(struct rte_mbuf *mbuf, uint32_t len);

/* An mbuf's packet length. */
uint32_t eiffel_dpdk_mbuf_len(const struct rte_mbuf *mbuf);

/* The calling thread's rte_errno. */
int eiffel_dpdk_errno(void);

/* The timestamp counter's frequency, as EAL measured it. */
uint64_t eiffel_dpdk_tsc_hz(void);

/* Makes `rdtsc` in the calling thread return a count the caller sets
 * instead of the hardware's (csrc/vtsc.c), starting at `start`: 0, or a
 * negative errno when the system cannot trap the instruction (-ENOTSUP off
 * x86-64 Linux). */
int eiffel_dpdk_virtual_tsc_begin(uint64_t start);

/* The count `rdtsc` returns from now on in the calling thread. */
void eiffel_dpdk_virtual_tsc_set(uint64_t count);

/* Gives the calling thread the hardware counter back: 0 or a negative errno. */
int eiffel_dpdk_virtual_tsc_end(void);

#endif
