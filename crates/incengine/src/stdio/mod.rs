//! A switch as a device under test over stdin/stdout: the length-prefixed
//! framing the conformance harness's `exec:CMD` adapter speaks (both
//! sides: [`read_to_dut`], [`write_from_dut`], …), and the lockstep
//! driver of this crate's switch behind it ([`serve_stdio`]).
//! [CONF-030]…[CONF-034]
//!
//! Every message is a big-endian `u32` length L (the kind byte and the
//! body, 1 ≤ L ≤ [`MAX_MESSAGE`]), a kind byte and L − 1 bytes of body.
//! The harness sends [`ToDut`] messages (FRAME, TIME, END); the DUT
//! answers with [`FromDut`] messages: READY (or REFUSED) once, then for
//! every FRAME and TIME zero or more FRAMEs and exactly one IDLE that
//! carries its next deadline. Time is virtual: the DUT never reads a
//! clock.

mod codec;
mod serve;

#[cfg(test)]
mod tests;

pub use codec::{
    kind, read_from_dut, read_to_dut, write_from_dut, write_to_dut, FramingError, FromDut, ToDut,
    MAX_MESSAGE,
};
pub use serve::{serve_stdio, StdioError};
