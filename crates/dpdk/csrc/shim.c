#include "shim.h"

int eiffel_dpdk_mbuf_alloc_bulk(struct rte_mempool *pool, struct rte_mbuf **mbufs, unsigned int count)
{
	return rte_pktmbuf_alloc_bulk(pool, mbufs, count);
}

void eiffel_dpdk_mbuf_set_len(struct rte_mbuf *mbuf, uint32_t len)
{
	mbuf->pkt_len = len;
	mbuf->data_len = (uint16_t)len;
}

uint32_t eiffel_dpdk_mbuf_len(const struct rte_mbuf *mbuf)
{
	return rte_pktmbuf_pkt_len(mbuf);
}

int eiffel_dpdk_errno(void)
{
	return rte_errno;
}

uint64_t eiffel_dpdk_tsc_hz(void)
{
	return rte_get_tsc_hz();
}
