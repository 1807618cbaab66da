//! Finds DPDK with pkg-config, generates the bindings of the functions and types
//! the crate uses with bindgen, and compiles the C shim over DPDK's inline
//! functions.

#[cfg(feature = "dpdk")]
use std::env;
#[cfg(feature = "dpdk")]
use std::path::PathBuf;

#[cfg(not(feature = "dpdk"))]
fn main() {}

#[cfg(feature = "dpdk")]
fn main() {
    println!("cargo:rerun-if-changed=csrc/shim.h");
    println!("cargo:rerun-if-changed=csrc/shim.c");
    println!("cargo:rerun-if-changed=csrc/vtsc.c");
    let dpdk = match pkg_config::Config::new()
        .atleast_version("22.11")
        .cargo_metadata(false)
        .probe("libdpdk")
    {
        Ok(lib) => lib,
        Err(e) => panic!(
            "DPDK not found through pkg-config ({e}); install Debian's libdpdk-dev, libclang-dev and \
             pkg-config (scripts/setup.d/dpdk.sh does it), or build without the `dpdk` feature"
        ),
    };
    // The libraries behind the symbols used here; their own dependencies come
    // with them as shared objects, and EAL loads the mempool drivers itself.
    for lib in [
        "rte_sched",
        "rte_mbuf",
        "rte_mempool",
        "rte_ring",
        "rte_eal",
    ] {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
    for dir in &dpdk.link_paths {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }

    let mut clang_args: Vec<String> = dpdk
        .include_paths
        .iter()
        .map(|p| format!("-I{}", p.display()))
        .collect();
    clang_args.push("-DALLOW_EXPERIMENTAL_API".into());
    clang_args.push("-include".into());
    clang_args.push("rte_config.h".into());
    // DPDK's headers need SSE4.2 on x86 (pkg-config says -march=corei7).
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") {
        clang_args.push("-msse4.2".into());
    }

    let mut shim = cc::Build::new();
    shim.file("csrc/shim.c")
        .file("csrc/vtsc.c")
        .warnings(true)
        .define("ALLOW_EXPERIMENTAL_API", None);
    for p in &dpdk.include_paths {
        shim.include(p);
    }
    shim.flag("-include").flag("rte_config.h");
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") {
        shim.flag("-msse4.2");
    }
    shim.compile("eiffel_dpdk_shim");

    let bindings = bindgen::Builder::default()
        .header("csrc/shim.h")
        .clang_args(&clang_args)
        .allowlist_function("eiffel_dpdk_.*")
        .allowlist_function("rte_eal_init")
        .allowlist_function("rte_eal_cleanup")
        .allowlist_function("rte_strerror")
        .allowlist_function("rte_pktmbuf_pool_create")
        .allowlist_function("rte_pktmbuf_free_bulk")
        .allowlist_function("rte_mempool_free")
        .allowlist_function("rte_mempool_avail_count")
        .allowlist_function("rte_sched_.*")
        .allowlist_type("rte_sched_.*")
        .allowlist_var("RTE_SCHED_.*")
        .opaque_type("rte_mempool")
        .opaque_type("rte_mbuf")
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate()
        .unwrap_or_else(|e| panic!("bindgen could not read DPDK's headers: {e}"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings
        .write_to_file(out.join("bindings.rs"))
        .expect("write the generated bindings");
}
