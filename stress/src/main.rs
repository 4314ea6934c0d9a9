//! The zerorx stress harness.
fn main() {}
