//! Real-kernel tests of the `zcrx` crate (filled as the pools land).
fn main() {}
