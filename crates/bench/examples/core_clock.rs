//! Prints the clock the core runs at ([`eiffel_bench::clock::core_ghz`]), to
//! read nanoseconds measured on a virtual machine whose clock moves from day to
//! day as cycles:
//!
//! ```sh
//! taskset -c 1 cargo run --release -p eiffel-bench --example core_clock
//! ```

fn main() {
    match eiffel_bench::clock::core_ghz() {
        Some(ghz) => println!("core clock {ghz:.2} GHz"),
        None => {
            eprintln!("core_clock measures x86-64 cores only");
            std::process::exit(2);
        }
    }
}
