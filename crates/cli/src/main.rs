//! The `eiffel` command-line tool.

fn main() {}
