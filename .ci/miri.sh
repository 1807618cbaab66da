#!/usr/bin/env bash
# Runs the tests of every module with unsafe code under miri: PSPAT's mailbox,
# sleeper, client lists, tags, link and sinks, eiffel-net's frame pool (real
# threads) and ring walkers (on fake kernel rings in ordinary memory), and
# eiffel-queue's prefetch hint and cffs's slab, eiffel-sched's compiled rank
# programs and the record stores of the policy tree and the pipe executor, and
# eiffel-capi's FFI functions (NULL pointers, the panic guard). Installs the
# nightly miri component if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal --component miri,rust-src
fi
cargo +nightly miri setup
# Miri cannot call sched_setaffinity or open packet sockets; the runtime's and the
# rings' integration tests use real threads and interfaces and run in the normal
# test run. Isolation off: proptest reads the working directory.
export MIRIFLAGS="${MIRIFLAGS:-} -Zmiri-strict-provenance -Zmiri-disable-isolation"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/miri"
cargo +nightly miri test -p eiffel-pspat --lib -- \
  mailbox:: sleeper:: clist:: tags:: link:: transmit:: pad::
cargo +nightly miri test -p eiffel-net --lib -- sys:: frames::
# eiffel-queue: the prefetch hint compiles to nothing under miri (which has no
# caches); cffs's slab (uninitialised items of free nodes, unchecked indexing
# justified by its invariants) runs its own tests and cffs's.
cargo +nightly miri test -p eiffel-queue --lib -- prefetch:: store:: bucketed:: circular:: slab:: cffs::
# eiffel-sched: the compiled rank programs (frame slots indexed unchecked,
# justified by the compiler's bounds check), and the record lookups of the
# policy tree and the pipe executor by the ids they hold (unchecked in release
# builds).
cargo +nightly miri test -p eiffel-sched --lib -- tree::program:: tree::nodes:: tree::pipes::
# The C API's extern functions on a small policy (about 1 min of tests, plus
# the build of its dependencies).
cargo +nightly miri test -p eiffel-capi --lib -- ffi::
