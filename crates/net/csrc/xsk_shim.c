// Batched access to AF_XDP rings and the setup of libxdp's default XSK program,
// for eiffel-net's `sys::xsk` module.
//
// The ring helpers of <xdp/xsk.h> are `static inline`, so Rust cannot call them:
// each function here moves a whole batch through one ring with them (one call per
// batch, never per frame). The program functions wrap libxdp's loader so that the
// Rust side sees integers and error codes only.

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

// Gives up to `n` frame addresses to the kernel through fill ring `fq`; returns
// how many it took (fewer when the ring has less room).
uint32_t eiffel_xsk_fill(struct xsk_ring_prod *fq, const uint64_t *addrs, uint32_t n) {
    uint32_t idx = 0;
    uint32_t got = xsk_ring_prod__reserve(fq, n, &idx);
    for (uint32_t i = 0; i < got; i++) {
        *xsk_ring_prod__fill_addr(fq, idx + i) = addrs[i];
    }
    if (got) {
        xsk_ring_prod__submit(fq, got);
    }
    return got;
}

// Takes up to `n` received descriptors from `rx` into `out`; returns how many.
uint32_t eiffel_xsk_rx(struct xsk_ring_cons *rx, struct xdp_desc *out, uint32_t n) {
    uint32_t idx = 0;
    uint32_t got = xsk_ring_cons__peek(rx, n, &idx);
    for (uint32_t i = 0; i < got; i++) {
        out[i] = *xsk_ring_cons__rx_desc(rx, idx + i);
    }
    if (got) {
        xsk_ring_cons__release(rx, got);
    }
    return got;
}

// Queues up to `n` descriptors for transmission on `tx`; returns how many fit.
uint32_t eiffel_xsk_tx(struct xsk_ring_prod *tx, const struct xdp_desc *descs, uint32_t n) {
    uint32_t idx = 0;
    uint32_t got = xsk_ring_prod__reserve(tx, n, &idx);
    for (uint32_t i = 0; i < got; i++) {
        *xsk_ring_prod__tx_desc(tx, idx + i) = descs[i];
    }
    if (got) {
        xsk_ring_prod__submit(tx, got);
    }
    return got;
}

// Takes up to `n` completed transmit addresses from `cq` into `out`; returns how
// many.
uint32_t eiffel_xsk_complete(struct xsk_ring_cons *cq, uint64_t *out, uint32_t n) {
    uint32_t idx = 0;
    uint32_t got = xsk_ring_cons__peek(cq, n, &idx);
    for (uint32_t i = 0; i < got; i++) {
        out[i] = *xsk_ring_cons__comp_addr(cq, idx + i);
    }
    if (got) {
        xsk_ring_cons__release(cq, got);
    }
    return got;
}

// Whether the kernel asks for a system call before it looks at producer ring `r`
// again (XDP_USE_NEED_WAKEUP).
int eiffel_xsk_needs_wakeup(const struct xsk_ring_prod *r) {
    return xsk_ring_prod__needs_wakeup(r);
}

// Free entries of producer ring `r` (at most `n` are looked for).
uint32_t eiffel_xsk_prod_free(struct xsk_ring_prod *r, uint32_t n) {
    return xsk_prod_nb_free(r, n);
}

// Entries the kernel put on producer ring `r` that it has not consumed yet.
uint32_t eiffel_xsk_prod_pending(const struct xsk_ring_prod *r) {
    return *r->producer - __atomic_load_n(r->consumer, __ATOMIC_ACQUIRE);
}

static int quiet(enum libxdp_print_level level, const char *fmt, va_list args) {
    (void)level;
    (void)fmt;
    (void)args;
    return 0;
}

static int quiet_bpf(enum libbpf_print_level level, const char *fmt, va_list args) {
    (void)level;
    (void)fmt;
    (void)args;
    return 0;
}

// Silences libxdp's and libbpf's own messages: every failure reaches the caller
// as an error code, which the Rust side turns into a message naming what to do.
void eiffel_xdp_quiet(void) {
    libxdp_set_print(quiet);
    libbpf_set_print(quiet_bpf);
}

// Loads libxdp's default XSK program (`xsk_def_xdp_prog.o`: redirect every frame
// of a queue with a bound socket to that socket, pass the others) and attaches it
// to `ifindex` in `mode` (an `enum xdp_attach_mode`), with room in its socket map
// for `queues` queues. On success stores the socket map's descriptor and the
// program, which `eiffel_xdp_close` releases, and returns 0; else a negative
// errno.
int eiffel_xdp_attach(int ifindex, int mode, uint32_t queues, int *map_fd,
                      struct xdp_program **out) {
    struct xdp_program *prog = xdp_program__find_file("xsk_def_xdp_prog.o", NULL, NULL);
    long err = libxdp_get_error(prog);
    if (err) {
        return (int)err;
    }
    struct bpf_object *obj = xdp_program__bpf_obj(prog);
    struct bpf_map *map = bpf_object__find_map_by_name(obj, "xsks_map");
    if (!map) {
        xdp_program__close(prog);
        return -ENOENT;
    }
    if (queues > bpf_map__max_entries(map)) {
        err = bpf_map__set_max_entries(map, queues);
        if (err) {
            xdp_program__close(prog);
            return (int)err;
        }
    }
    err = xdp_program__attach(prog, ifindex, (enum xdp_attach_mode)mode, 0);
    if (err) {
        xdp_program__close(prog);
        return (int)err;
    }
    int fd = bpf_map__fd(map);
    if (fd < 0) {
        xdp_program__detach(prog, ifindex, (enum xdp_attach_mode)mode, 0);
        xdp_program__close(prog);
        return fd;
    }
    *map_fd = fd;
    *out = prog;
    return 0;
}

// Releases a program from `eiffel_xdp_attach` (this does not detach it).
void eiffel_xdp_close(struct xdp_program *prog) {
    xdp_program__close(prog);
}

// What is attached to `ifindex`: returns 0 when nothing is, 1 when a program is
// (its name, truncated to `len` bytes, in `name`, its attach mode in `mode`), or
// a negative errno.
int eiffel_xdp_query(int ifindex, char *name, size_t len, int *mode) {
    struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
    long err = libxdp_get_error(mp);
    if (err) {
        return err == -ENOENT ? 0 : (int)err;
    }
    if (!mp) {
        return 0;
    }
    struct xdp_program *main = xdp_multiprog__main_prog(mp);
    if (!main) {
        xdp_multiprog__close(mp);
        return 0;
    }
    // Behind libxdp's dispatcher the program that matters is the first one it
    // runs; a legacy attachment is the program itself.
    struct xdp_program *prog = main;
    if (!xdp_multiprog__is_legacy(mp)) {
        struct xdp_program *first = xdp_multiprog__next_prog(NULL, mp);
        if (first) {
            prog = first;
        }
    }
    if (len) {
        strncpy(name, xdp_program__name(prog), len - 1);
        name[len - 1] = '\0';
    }
    *mode = (int)xdp_multiprog__attach_mode(mp);
    xdp_multiprog__close(mp);
    return 1;
}

// Detaches whatever XDP program (or libxdp dispatcher) is attached to
// `ifindex`; returns 0 or a negative errno.
int eiffel_xdp_detach(int ifindex) {
    struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
    long err = libxdp_get_error(mp);
    if (err) {
        return err == -ENOENT ? 0 : (int)err;
    }
    if (!mp) {
        return 0;
    }
    err = xdp_multiprog__detach(mp);
    xdp_multiprog__close(mp);
    return (int)err;
}
