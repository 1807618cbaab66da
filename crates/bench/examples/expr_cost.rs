//! Runs one case of the rank-expression comparison for a fixed number of steps,
//! for instruction counts that do not depend on the load of the machine:
//!
//! ```sh
//! cargo build --release -p eiffel-bench --example expr_cost
//! valgrind --tool=callgrind target/release/examples/expr_cost 0 expr 100000
//! ```
//!
//! Arguments: the case's index in `eiffel_bench::policy::exprs::CASES`,
//! `builtin` or `expr`, and the number of steps. Run it with two step counts:
//! the difference of the totals divided by the difference of the steps is the
//! cost of one packet, construction excluded.

use eiffel_bench::policy::exprs::{ExprWorkload, CASES};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: expr_cost CASE(0..) builtin|expr STEPS";
    let (Some(case), Some(variant), Some(steps)) = (args.get(1), args.get(2), args.get(3)) else {
        return Err(usage.into());
    };
    let case = CASES.get(case.parse::<usize>()?).ok_or("no such case")?;
    let expr = match variant.as_str() {
        "builtin" => false,
        "expr" => true,
        _ => return Err(usage.into()),
    };
    let policy = case.policy(expr)?;
    let mut w = ExprWorkload::new(case, &policy);
    for _ in 0..steps.parse::<u64>()? {
        w.step();
    }
    println!("{} {variant}: {steps} steps", case.name);
    Ok(())
}
