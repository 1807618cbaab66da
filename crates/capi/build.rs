//! Generates the C header `eiffel.h` from the crate's `extern "C"` items with
//! cbindgen, into `OUT_DIR` and, when `EIFFEL_CAPI_INCLUDE_DIR` is set, into
//! that directory too.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=EIFFEL_CAPI_INCLUDE_DIR");
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("eiffel.h");
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .with_src(dir.join("src/types.rs"))
        .with_src(dir.join("src/ffi.rs"))
        .generate()
        .expect("the C header generates");
    bindings.write_to_file(&out);
    if let Some(include) = std::env::var_os("EIFFEL_CAPI_INCLUDE_DIR") {
        let include = PathBuf::from(include);
        std::fs::create_dir_all(&include).expect("EIFFEL_CAPI_INCLUDE_DIR can be created");
        std::fs::copy(&out, include.join("eiffel.h")).expect("eiffel.h copied");
    }
}
