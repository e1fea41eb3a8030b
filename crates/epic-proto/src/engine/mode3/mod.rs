//! Mode III, connection augmented (Algorithms 2–3, §4.4): per-hop ACK/NAK
//! and retransmission out of pipes whose valid range is
//! [psnStart, psnStart + N), psnStart = min(lastAcked) + 1 over the pipe's
//! outputs. [M3-001]

mod cc;
mod credit;
mod pipes;
mod send;
mod sr;
mod state;

#[cfg(test)]
pub(crate) use cc::HopCc;
pub(crate) use state::Augmented;
