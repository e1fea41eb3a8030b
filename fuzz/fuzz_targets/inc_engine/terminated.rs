//! The CONTROL, DATA and ACK operations on a Mode I context: control
//! messages and data messages posted on the edges' RC peers (which segment
//! them into SEND FIRST/MIDDLE/LAST/ONLY, with or without an immediate),
//! and acknowledgements forged beside the peers' own. [M1-001]…[M1-040]
//!
//! The switch tags a data message with the invocation of the last control
//! message its edge delivered and its index since [M1-030]; the peer
//! remembers both (`Peer1::tx`), and a message sent out of that order
//! makes the run unclean.

use epic_proto::roce::SendOp;
use epic_proto::wire::{Syndrome, EPIC_HEADER_LEN, EPIC_IMM_TAG};

use super::*;

impl Harness {
    /// CONTROL on a Mode I context: the header of `inv` as a SEND with the
    /// EPIC immediate from the peer of `ep` (a parent's is its echo), with
    /// the first data PSN of the peer's own QP [M1-020]. `variant` and
    /// `arg` as for Modes II/III: 0..=7 the header as begun; 8 another
    /// group; 9 collective 5; 10 collective 6; 11 quantized; 12 a Reduce
    /// rooted outside the group; 13 a header failing validation; 14 another
    /// immediate (a 36-byte data message); 15 contradicting: another
    /// invocation number, first PSN + 1, the reproducible flag flipped,
    /// first PSN − 1 (the first PSN is the sender's own: a switch ignores
    /// it [M1-020]). `flush`: hand what the peer has to send to the
    /// engine now (otherwise the next PUMP round does).
    pub(crate) fn post_control1(
        &mut self,
        ci: usize,
        ep: usize,
        inv: &ModelInv,
        [variant, arg]: [u8; 2],
        flush: bool,
    ) {
        let Some(peer) = self.ctxs[ci].peers.get(ep) else {
            return;
        };
        let mut h = inv.h;
        h.first_psn = peer.qp.post_psn().next();
        let idle = peer.qp.outstanding_sends() == 0;
        let premature = self.ctxs[ci].parent() == Some(ep) && !peer.got.contains(&h.invocation);
        let mut imm = EPIC_IMM_TAG;
        let mut accepted = inv.admitted;
        match variant {
            0..=7 => {}
            8..=12 => {
                super::frames::refuse(&mut h, variant, arg, self.ctxs[ci].cfg.ranks);
                accepted = false;
            }
            13 => {
                h.packet_count = h.packet_count.wrapping_add(1 + u32::from(arg % 4));
                accepted = false;
            }
            14 => {
                imm = EPIC_IMM_TAG ^ (1 + u32::from(arg));
                self.clean = false;
                accepted = false;
            }
            _ => match arg & 3 {
                0 => {
                    h.invocation = h.invocation.wrapping_add(1);
                    self.clean = false;
                    accepted = false;
                }
                1 => h.first_psn = h.first_psn.next(),
                2 => {
                    h.flags.reproducible = !h.flags.reproducible;
                    self.clean = false;
                }
                _ => h.first_psn = h.first_psn.sub(1),
            },
        }
        let valid = h
            .validate()
            .and_then(|()| h.check_control_psn(h.first_psn.sub(1)));
        assert_eq!(
            valid.is_ok(),
            variant != 13,
            "harness: Mode I control variant {variant} validates as {valid:?} ({h:?})"
        );
        if accepted && premature {
            // A parent echoes only what went up. [M1-021]
            self.clean = false;
        }
        let mut hdr = vec![0u8; EPIC_HEADER_LEN];
        if let Err(e) = h.emit(&mut hdr) {
            panic!("emit of a header failed: {e:?}");
        }
        let Some(peer) = self.ctxs[ci].peers.get_mut(ep) else {
            return;
        };
        if !peer.send(SendOp::SendWithImm { imm }, hdr) {
            return;
        }
        if accepted {
            peer.tx = Some((h.invocation, 0));
        }
        let refused = !accepted && variant != 13 && variant != 14 && variant < 15;
        if !flush {
            return;
        }
        let before = self.eng.counters().invocations_installed;
        self.flush_peer(ci, ep);
        if refused && idle {
            assert_eq!(
                self.eng.counters().invocations_installed,
                before,
                "Mode I: a control message the engine must refuse installed an invocation \
                 (variant {variant}, {h:?}) [CTL-013] [CTL-050]"
            );
        }
    }

    /// DATA on a Mode I context: the next messages of `inv` from the peer
    /// of `ep`.
    ///
    /// | byte | meaning |
    /// |------|---------|
    /// | 0    | as for Modes II/III; bit 4: every message left |
    /// | 1    | messages: 1 + `% 4` |
    /// | 2    | bits 0..1: SEND (0, 3), with another immediate (1), with the EPIC immediate (2); bits 3..5: length (0..=4 right; 5: 1 + byte 3 % 4 elements more (byte 3 bit 2) or fewer; 6: empty; 7: U·M + 4); bit 6: 8 × byte 3 payload bytes from the input (forged) |
    /// | 3    | argument |
    pub(crate) fn data1(
        &mut self,
        ci: usize,
        inv: &ModelInv,
        [who, count, variant, arg]: [u8; 4],
        forged: Option<&[u8]>,
    ) {
        let ctx = &self.ctxs[ci];
        let pat = ctx.pattern(inv, inv.data_psn(0));
        let targets = if who & 15 == 15 {
            ctx.senders(pat)
        } else {
            vec![usize::from(who & 15) % ctx.eps()]
        };
        for ep in targets {
            let n = match self.ctxs[ci].peers.get(ep).and_then(|p| p.tx) {
                Some((s, k)) if who & 0x10 != 0 && s == inv.h.invocation => {
                    self.ctxs[ci].msgs(inv).saturating_sub(k).max(1)
                }
                _ => 1 + u32::from(count % 4),
            };
            for _ in 0..n.min(64) {
                self.post_data1(ci, ep, inv, variant, arg, forged);
            }
            self.flush_peer(ci, ep);
        }
    }

    /// Posts the next data message of `inv` on the peer of `ep`.
    pub(crate) fn post_data1(
        &mut self,
        ci: usize,
        ep: usize,
        inv: &ModelInv,
        variant: u8,
        arg: u8,
        forged: Option<&[u8]>,
    ) {
        let ctx = &self.ctxs[ci];
        let Some(peer) = ctx.peers.get(ep) else {
            return;
        };
        let k = match peer.tx {
            Some((s, k)) if s == inv.h.invocation && inv.admitted => k,
            _ => {
                // The switch tags it with another invocation. [M1-030]
                self.clean = false;
                0
            }
        };
        let msgs = ctx.msgs(inv);
        let right = ctx.msg_len(inv, k);
        let size = usize::from(inv.h.data_type.size_bytes().unwrap_or(4));
        let len = match (variant >> 3) & 7 {
            0..=4 => right,
            5 => {
                let d = size * (1 + usize::from(arg & 3));
                if arg & 4 != 0 {
                    right + d
                } else {
                    right.saturating_sub(d)
                }
            }
            6 => 0,
            _ => usize::from(ctx.cfg.max_payload) * ctx.cfg.message_packets.max(1) as usize + 4,
        };
        let payload = match forged {
            Some(b) => {
                self.clean = false;
                b.to_vec()
            }
            None => ctx.payload(inv, ep, k, len),
        };
        let op = match variant & 3 {
            1 => SendOp::SendWithImm {
                imm: u32::from(arg) | 0x100,
            },
            2 => SendOp::SendWithImm { imm: EPIC_IMM_TAG },
            _ => SendOp::Send,
        };
        // Only an input edge of the pattern sends data [M1-030].
        let input = ctx.sends(ctx.pattern(inv, inv.data_psn(0)), ep);
        let counts = op != (SendOp::SendWithImm { imm: EPIC_IMM_TAG })
            && payload.len() == right
            && k < msgs
            && input;
        let Some(peer) = self.ctxs[ci].peers.get_mut(ep) else {
            return;
        };
        if peer.send(op, payload) && counts {
            peer.tx = Some((inv.h.invocation, k + 1));
        }
    }

    /// ACK on a Mode I context: the PSN (`psn_sel % 8`): 0 the highest seen
    /// acknowledged; 1 the last request the switch sent; 2 the highest it
    /// sent; 3 the first unacknowledged + byte 3 `% 8`; 4 the last sent +
    /// byte 3 as i8; 5 `any`; 6 the highest acknowledged − 1 − byte 3; 7
    /// the highest sent + byte 3. An acknowledgement of a PSN the peer has
    /// not received makes the run unclean.
    pub(crate) fn ack1(
        &mut self,
        ci: usize,
        ep: usize,
        [psn_sel, arg]: [u8; 2],
        any: Psn,
        syndrome: Syndrome,
    ) {
        let Some(peer) = self.ctxs[ci].peers.get(ep) else {
            return;
        };
        let s = &peer.seq;
        let psn = match psn_sel % 8 {
            0 => s.acked_to(),
            1 => s.last_req(),
            2 => s.max_sent(),
            3 => s.acked_to().add(1 + u32::from(arg % 8)),
            4 => {
                let d = i32::from(arg as i8);
                if d >= 0 {
                    s.last_req().add(d.unsigned_abs())
                } else {
                    s.last_req().sub(d.unsigned_abs())
                }
            }
            5 => any,
            6 => s.acked_to().sub(1 + u32::from(arg)),
            _ => s.max_sent().add(u32::from(arg)),
        };
        let epsn = peer.qp.expected_psn();
        let truthful = match syndrome {
            Syndrome::Ack { .. } => psn.is_before(epsn),
            Syndrome::RnrNak { .. } | Syndrome::Nak(_) => !psn.is_after(epsn),
            Syndrome::Unknown(_) => true,
        };
        self.clean &= truthful;
        self.send_ack(ci, ep, psn, syndrome);
    }
}
