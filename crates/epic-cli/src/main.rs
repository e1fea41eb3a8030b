//! The `epic` command.
fn main() {}
