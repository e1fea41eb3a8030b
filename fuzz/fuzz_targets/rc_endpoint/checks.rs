//! The Harness: completions, tracing, the invariants and the end-of-input settle.

use super::*;

impl Harness {
    // --- completions -----------------------------------------------------

    /// Polls up to `max` completions (all for 0) from side `i`.
    pub(crate) fn poll_completions(&mut self, i: usize, max: usize) -> usize {
        let mut n = 0;
        while max == 0 || n < max {
            let Some(wc) = self.s[i].qp.poll_completion() else {
                break;
            };
            self.check_completion(i, wc);
            n += 1;
        }
        if max == 0 {
            // Everything returned: the QP's counts are ours.
            let side = &self.s[i];
            assert_eq!(
                side.qp.outstanding_sends(),
                side.sends.len(),
                "{}: sends",
                side.name
            );
            assert_eq!(
                side.qp.posted_recvs(),
                side.recvs.len(),
                "{}: recvs",
                side.name
            );
        }
        n
    }

    pub(crate) fn check_completion(&mut self, i: usize, wc: Wc) {
        let clean = self.clean;
        let (me, peer) = if i == 0 {
            let [a, b] = &mut self.s;
            (a, b)
        } else {
            let [a, b] = &mut self.s;
            (b, a)
        };
        let name = me.name;
        let status = wc.status();
        if status != WcStatus::Success {
            assert!(
                me.in_error(),
                "{name}: error completion {status:?} while ready"
            );
        }
        match wc {
            Completion::Send {
                wr_id, opcode, buf, ..
            } => {
                let Some(p) = me.sends.pop_front() else {
                    panic!("{name}: send completion {wr_id:?} with nothing posted");
                };
                assert_eq!(
                    wr_id,
                    WrId(p.wr_id),
                    "{name}: send completions out of post order"
                );
                assert_eq!(buf.len(), p.len, "{name}: send buffer length");
                assert!(is_pattern(&buf, p.wr_id), "{name}: send buffer changed");
                let want = if p.write {
                    WcOpcode::RdmaWrite
                } else {
                    WcOpcode::Send
                };
                assert_eq!(opcode, want, "{name}: send completion opcode");
            }
            Completion::Recv {
                wr_id,
                opcode,
                byte_len,
                imm,
                buf,
                ..
            } => {
                let Some(p) = me.recvs.pop_front() else {
                    panic!("{name}: recv completion {wr_id:?} with nothing posted");
                };
                assert_eq!(
                    wr_id,
                    WrId(p.wr_id),
                    "{name}: recv completions out of post order"
                );
                assert_eq!(buf.len(), p.len, "{name}: recv buffer length");
                if status != WcStatus::Success {
                    return;
                }
                match opcode {
                    WcOpcode::Recv => {
                        assert!(byte_len as usize <= buf.len(), "{name}: byte_len > buffer");
                    }
                    WcOpcode::RecvRdmaWithImm => {
                        assert!(imm.is_some(), "{name}: RECV_RDMA_WITH_IMM without imm");
                    }
                    other => panic!("{name}: recv completion with opcode {other:?}"),
                }
                if !clean {
                    return;
                }
                // Clean run: this is the next message the peer posted.
                let Some(e) = peer.to_deliver.pop_front() else {
                    panic!("{name}: received a message the peer never posted");
                };
                let want = if e.write {
                    WcOpcode::RecvRdmaWithImm
                } else {
                    WcOpcode::Recv
                };
                assert_eq!(opcode, want, "{name}: message kind (peer wr {})", e.wr_id);
                assert_eq!(
                    byte_len as usize, e.len,
                    "{name}: byte_len (peer wr {})",
                    e.wr_id
                );
                assert_eq!(imm, e.imm, "{name}: immediate (peer wr {})", e.wr_id);
                if !e.write {
                    let got = buf.get(..e.len).unwrap_or(&[]);
                    assert!(
                        got == pattern(e.wr_id, e.len).as_slice(),
                        "{name}: payload of peer wr {} corrupted",
                        e.wr_id
                    );
                }
            }
        }
    }

    pub(crate) fn trace(&self, name: &str, op: u8) {
        if !tracing() {
            return;
        }
        eprintln!(
            "{name}({}) now={} clean={} lossless={} links={}/{}",
            ["A", "B"][usize::from(op >> 7)],
            self.now,
            self.clean,
            self.lossless,
            self.link[0].len(),
            self.link[1].len()
        );
        for s in &self.s {
            let q = &s.qp;
            eprintln!(
                "  {} {:?} send_psn={} unacked={} epsn={} out={} recvs={} timer={:?} {:?}",
                s.name,
                q.state(),
                q.send_psn(),
                q.unacked_psn(),
                q.expected_psn(),
                q.outstanding_sends(),
                q.posted_recvs(),
                q.poll_timeout(),
                q.counters()
            );
        }
    }

    // --- invariants ------------------------------------------------------

    pub(crate) fn check(&mut self, op: &str) {
        for i in 0..2 {
            let side = &self.s[i];
            let cfg = *side.qp.config();
            let name = side.name;
            assert!(
                side.qp.outstanding_sends() <= usize::from(cfg.sq_depth),
                "{name} after {op}: outstanding_sends > sq_depth"
            );
            assert!(
                side.qp.outstanding_sends() <= side.sends.len(),
                "{name} after {op}: sends"
            );
            assert!(
                side.qp.posted_recvs() <= usize::from(cfg.rq_depth),
                "{name} after {op}: posted_recvs > rq_depth"
            );
            assert!(
                side.qp.posted_recvs() <= side.recvs.len(),
                "{name} after {op}: recvs"
            );
            assert_eq!(
                side.qp.counters().rx_frames,
                side.rx_frames,
                "{name} after {op}: rx_frames"
            );
            if side.was_error {
                assert!(side.in_error(), "{name} after {op}: left the error state");
            }
            if side.in_error() {
                assert_eq!(
                    side.qp.poll_timeout(),
                    None,
                    "{name} after {op}: timer in error"
                );
                self.s[i].was_error = true;
                self.poll_completions(i, 0);
                let side = &self.s[i];
                assert!(
                    side.sends.is_empty() && side.recvs.is_empty(),
                    "{name} after {op}: {} sends and {} recvs not returned in error",
                    side.sends.len(),
                    side.recvs.len()
                );
                assert_eq!(side.qp.outstanding_sends(), 0);
                assert_eq!(side.qp.posted_recvs(), 0);
            } else if side.qp.outstanding_sends() > 0 && has_retry_timer(&cfg) {
                // No silent stall: once everything sendable is sent, a timer
                // (retransmit or RNR wait) is armed.
                let mut probe = side.qp.clone();
                let mut buf = vec![0u8; probe.max_frame_len()];
                let mut n = 0;
                while let Ok(Some(_)) = probe.poll_transmit(self.now, &mut buf) {
                    n += 1;
                    assert!(n < 100_000, "{name}: poll_transmit never returns None");
                }
                assert!(
                    probe.state() == QpState::Error || probe.poll_timeout().is_some(),
                    "{name} after {op}: {} sends outstanding, nothing to send and no timer",
                    probe.outstanding_sends()
                );
            }
        }
    }

    /// End of input. In a clean run with both QPs ready: lossless links and
    /// timers must finish every send or put a QP in error.
    pub(crate) fn settle(&mut self) {
        if !self.clean {
            return;
        }
        let timers = self.s.iter().all(|s| has_retry_timer(s.qp.config()));
        if !timers && !self.lossless {
            // Without a retry timer a lost packet may stall a QP forever,
            // as in rxe.
            return;
        }
        for round in 0..SETTLE_ROUNDS {
            if self.s.iter().any(Side::in_error) {
                // The other QP may retry forever against a dead peer.
                self.check("settle");
                return;
            }
            for i in 0..2 {
                self.poll_completions(i, 0);
                // Keep receives posted so that RNR NAKs end.
                while self.s[i].recvs.len() < usize::from(self.s[i].qp.config().rq_depth) {
                    let wr_id = self.wr_id();
                    if !self.post_recv_len(i, wr_id, SETTLE_RECV) {
                        break;
                    }
                }
            }
            let quiet = self.pump(1);
            self.check("settle");
            self.trace("settle round", 0);
            if !quiet {
                continue;
            }
            if self.s.iter().all(|s| s.qp.outstanding_sends() == 0) {
                for i in 0..2 {
                    self.poll_completions(i, 0);
                }
                self.check("settle");
                return;
            }
            match self.deadline() {
                Some(d) => {
                    self.now = self.now.max(d);
                    self.run_timers();
                }
                None => panic!(
                    "pair stuck after {round} settle rounds: A {} / B {} sends outstanding, \
                     no frame to send and no timer",
                    self.s[0].qp.outstanding_sends(),
                    self.s[1].qp.outstanding_sends()
                ),
            }
        }
        panic!(
            "pair did not settle in {SETTLE_ROUNDS} rounds: A {} / B {} sends outstanding",
            self.s[0].qp.outstanding_sends(),
            self.s[1].qp.outstanding_sends()
        );
    }
}

/// Checks one frame from `poll_transmit`. `unacked` is the QP's oldest
/// unacknowledged PSN before the call.
pub(crate) fn check_emitted(side: &Side, frame: &[u8], unacked: Psn, in_error: bool) {
    let name = side.name;
    let cfg = side.qp.config();
    let f = match RoceFrame::parse_verified_transport(frame) {
        Ok(f) => f,
        Err(e) => panic!("{name}: poll_transmit emitted a bad frame: {e} ({frame:02x?})"),
    };
    // The full parse also judges EPIC control messages. A SEND ONLY with
    // immediate 0x45504943 is one; keeping that immediate off EPIC-served
    // connections is the application's job ([WIRE-101]), so its payload
    // need not be a valid EPIC header.
    if !is_epic_control(&f.bth, &f.ext) {
        if let Err(e) = RoceFrame::parse_verified(frame) {
            panic!("{name}: poll_transmit emitted a frame parse_verified rejects: {e}");
        }
    }
    let path = &cfg.path;
    assert_eq!(f.eth.src, path.local_mac, "{name}: Ethernet source");
    assert_eq!(f.eth.dst, path.remote_mac, "{name}: Ethernet destination");
    assert_eq!(f.eth.vlan, path.vlan, "{name}: VLAN");
    assert_eq!(f.ipv4.src, path.local_ip, "{name}: IPv4 source");
    assert_eq!(f.ipv4.dst, path.remote_ip, "{name}: IPv4 destination");
    assert_eq!(f.udp.dst_port, ROCEV2_PORT);
    assert_eq!(
        f.udp.src_port,
        cfg.udp_src_port(),
        "{name}: UDP source port"
    );
    assert_eq!(f.bth.dest_qp, cfg.remote_qpn, "{name}: destination QP");
    assert_eq!(f.bth.pkey, cfg.pkey, "{name}: P_Key");
    assert_eq!(f.bth.opcode.transport(), Transport::Rc, "{name}: not RC");
    assert!(
        f.payload.len() <= cfg.mtu.bytes() as usize,
        "{name}: payload > MTU"
    );
    if f.bth.opcode == Opcode::RcAcknowledge {
        assert!(f.ext.aeth.is_some(), "{name}: ACK without AETH");
        assert!(f.payload.is_empty(), "{name}: ACK with payload");
    } else if f.bth.opcode == Opcode::RcSack {
        // Only an SR responder sends SACKs, with an ACK syndrome. [WIRE-052]
        assert!(cfg.transport != Profile::Gbn, "{name}: SACK from a GBN QP");
        assert!(
            f.ext.aeth.is_some_and(|a| a.syndrome.is_ack()),
            "{name}: SACK without an ACK AETH"
        );
        assert!(f.sack().is_some(), "{name}: SACK without a SACKETH");
    } else {
        assert!(
            !in_error,
            "{name}: request {:?} sent in the error state",
            f.bth.opcode
        );
        let d = f.bth.psn.distance_from(unacked);
        assert!(
            d <= cfg.max_unacked_psns,
            "{name}: request PSN {} is {d} past the unacked PSN {unacked} (window {})",
            f.bth.psn,
            cfg.max_unacked_psns
        );
    }
}

/// Whether the QP always retries on its own: go-back-N with a local ACK
/// timeout, or SR, whose timers come from its estimator. [RC-040] [SR-016]
fn has_retry_timer(cfg: &QpConfig) -> bool {
    cfg.ack_timeout().is_some() || cfg.transport != Profile::Gbn
}
