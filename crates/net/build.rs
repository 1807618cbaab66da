//! Builds the AF_XDP support when libxdp and libbpf are installed (Debian's
//! `libxdp-dev` and `libbpf-dev`, which `scripts/setup.d/xdp.sh` installs): finds
//! them with pkg-config, compiles the C shim over the ring helpers of
//! `<xdp/xsk.h>`, and sets `cfg(eiffel_xdp)`. Without them the crate builds
//! without AF_XDP, and `eiffel shape --io af_xdp` says what to install.
//! `EIFFEL_XDP=0` builds without AF_XDP even when the libraries are there; so do
//! the loom and miri builds.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(eiffel_xdp)");
    println!("cargo:rerun-if-changed=csrc/xsk_shim.c");
    println!("cargo:rerun-if-env-changed=EIFFEL_XDP");
    if std::env::var("EIFFEL_XDP").as_deref() == Ok("0") {
        return;
    }
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    // The loom models and miri check the frame pool on ordinary memory; neither
    // can run the kernel's side of AF_XDP.
    if std::env::var_os("CARGO_CFG_LOOM").is_some() || std::env::var_os("CARGO_CFG_MIRI").is_some()
    {
        return;
    }
    let mut include = Vec::new();
    for lib in ["libxdp", "libbpf"] {
        match pkg_config::Config::new().cargo_metadata(true).probe(lib) {
            Ok(found) => include.extend(found.include_paths),
            Err(e) => {
                watch_pkg_config_dirs();
                println!(
                    "cargo:warning=eiffel-net is built without AF_XDP: {lib} not found ({e}); \
                     install libxdp-dev and libbpf-dev (scripts/setup.d/xdp.sh)"
                );
                return;
            }
        }
    }
    let mut shim = cc::Build::new();
    shim.file("csrc/xsk_shim.c").warnings(true).opt_level(2);
    for dir in &include {
        shim.include(dir);
    }
    shim.compile("eiffel_xsk_shim");
    println!("cargo:rustc-cfg=eiffel_xdp");
}

/// Without the libraries, a later install must rebuild the crate with AF_XDP:
/// the build reruns when a directory pkg-config searches changes (a new `.pc`
/// file), not only when this crate's sources do.
fn watch_pkg_config_dirs() {
    let mut dirs: Vec<String> = std::env::var("PKG_CONFIG_PATH")
        .unwrap_or_default()
        .split(':')
        .map(str::to_owned)
        .collect();
    if let Ok(out) = std::process::Command::new("pkg-config")
        .args(["--variable", "pc_path", "pkg-config"])
        .output()
    {
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        dirs.extend(text.split(':').map(str::to_owned));
    }
    for dir in dirs {
        if !dir.is_empty() && std::path::Path::new(&dir).is_dir() {
            println!("cargo:rerun-if-changed={dir}");
        }
    }
}
