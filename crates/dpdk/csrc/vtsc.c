/* A virtual timestamp counter for one thread: rte_sched reads the time with
 * the `rdtsc` instruction (rte_get_tsc_cycles, inlined into librte_sched), so
 * the only way to run it on a clock the caller advances is to make `rdtsc`
 * trap. Linux does that per thread (prctl PR_SET_TSC, PR_TSC_SIGSEGV: the
 * instruction raises SIGSEGV); the handler below then writes the virtual count
 * into the registers `rdtsc` (or `rdtscp`) would have set and steps over the
 * instruction. A thread the trapping one creates inherits the trap and gets
 * the hardware counter back at its first `rdtsc`. Any other SIGSEGV goes to
 * the handler that was installed before, as if this one were not there.
 * x86-64 Linux only. */
#define _GNU_SOURCE
#include <errno.h>

#include "shim.h"

#if defined(__x86_64__) && defined(__linux__)

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <ucontext.h>

static struct sigaction previous;
static pthread_once_t installed = PTHREAD_ONCE_INIT;
static int install_error;
/* The count `rdtsc` returns in this thread while it traps. */
static __thread uint64_t virtual_tsc;
static __thread int trapping;

static void pass_on(int sig, siginfo_t *info, void *context)
{
	if (previous.sa_flags & SA_SIGINFO) {
		if (previous.sa_sigaction != NULL) {
			previous.sa_sigaction(sig, info, context);
			return;
		}
	} else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
		return;
	}
	/* Default action: the fault repeats on return and kills the process. */
	signal(sig, SIG_DFL);
}

static void on_segv(int sig, siginfo_t *info, void *context)
{
	ucontext_t *uc = context;
	const unsigned char *ip = (const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
	int length = 0;
	if (ip != NULL) {
		if (ip[0] == 0x0f && ip[1] == 0x31)
			length = 2; /* rdtsc */
		else if (ip[0] == 0x0f && ip[1] == 0x01 && ip[2] == 0xf9)
			length = 3; /* rdtscp: also sets ecx, the processor id */
	}
	if (length == 0) {
		pass_on(sig, info, context);
		return;
	}
	if (!trapping) {
		/* A thread created by a trapping one inherits the trap: it gets the
		 * hardware counter back, and the instruction runs again. */
		prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0);
		return;
	}
	uc->uc_mcontext.gregs[REG_RAX] = (greg_t)(virtual_tsc & 0xffffffffu);
	uc->uc_mcontext.gregs[REG_RDX] = (greg_t)(virtual_tsc >> 32);
	if (length == 3)
		uc->uc_mcontext.gregs[REG_RCX] = 0;
	uc->uc_mcontext.gregs[REG_RIP] += length;
}

static void install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &previous) != 0)
		install_error = errno;
}

int eiffel_dpdk_virtual_tsc_begin(uint64_t start)
{
	pthread_once(&installed, install);
	if (install_error != 0)
		return -install_error;
	virtual_tsc = start;
	trapping = 1;
	if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) {
		trapping = 0;
		return -errno;
	}
	return 0;
}

void eiffel_dpdk_virtual_tsc_set(uint64_t count)
{
	virtual_tsc = count;
}

int eiffel_dpdk_virtual_tsc_end(void)
{
	int r = prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0);
	trapping = 0;
	return r == 0 ? 0 : -errno;
}

#else

int eiffel_dpdk_virtual_tsc_begin(uint64_t start)
{
	(void)start;
	return -ENOTSUP;
}

void eiffel_dpdk_virtual_tsc_set(uint64_t count)
{
	(void)count;
}

int eiffel_dpdk_virtual_tsc_end(void)
{
	return 0;
}

#endif
