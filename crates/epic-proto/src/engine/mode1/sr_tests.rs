//! Mode I under the SR profile: every edge's RC endpoint keeps what
//! arrives after a gap and answers with SACKs, and resends only what its
//! peer reports missing; the context around the endpoints does not
//! change. SPEC §17.12. [SR-060] [SR-061] [SR-062]
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use alloc::vec::Vec;

use super::tests::{context, header, Rig, MSG};
use crate::engine::{EngineDropReason, PsnAlignment};
use crate::psn::Psn;
use crate::roce::{Completion, Transport};
use crate::wire::{Collective, GroupId, Opcode, RoceFrame};

/// A two-rank star, W = 8, on `transport`, with both controls of a
/// `msgs`-message AllReduce in and echoed.
fn started(transport: Transport, msgs: u32) -> Rig {
    let mut rig = Rig::with_transport(context(2, false, 8, PsnAlignment::Resync), transport);
    for p in 0..2 {
        rig.control(p, header(1, Collective::AllReduce, 0, msgs));
        rig.peer_sends(p);
    }
    rig.rounds(2, &mut |_, _| false);
    rig
}

/// The data results peer `p` received, as their payloads.
fn result_payloads(rig: &mut Rig, p: usize) -> Vec<Vec<u8>> {
    core::iter::from_fn(|| rig.peers[p].poll_completion())
        .filter_map(|c| match c {
            Completion::Recv {
                imm: None,
                buf,
                byte_len,
                ..
            } => Some(buf[..byte_len as usize].to_vec()),
            _ => None,
        })
        .collect()
}

fn is_data(f: &[u8]) -> bool {
    RoceFrame::parse(f).unwrap().bth.opcode == Opcode::RcSendOnly
}

/// Both ranks got every result, each the sum of two messages of 7s.
fn assert_results(rig: &mut Rig, msgs: usize) {
    for p in 0..2 {
        let got = result_payloads(rig, p);
        assert_eq!(got.len(), msgs, "rank {p}");
        for r in got {
            assert_eq!(r.len(), MSG);
            for w in r.chunks(4) {
                assert_eq!(w, 0x0e0e_0e0eu32.to_le_bytes(), "rank {p}");
            }
        }
    }
}

/// [SR-060] The profile reaches the edges only when given: a go-back-N
/// context holds no SR state, an SR one the endpoints' windows and send
/// records (W = 8, M = 1: 128 PSNs unacknowledged, a window of 256 PSNs of
/// 256 + 1 bytes and a 64-byte record each, 256 send records of 32
/// bytes, on two edges). A context that has carried traffic keeps its
/// profile.
#[test]
fn sr_060_profile_reaches_the_edges_at_install_only() {
    let gbn = Rig::with_transport(context(2, false, 8, PsnAlignment::Resync), Transport::Gbn);
    let ctx = gbn.eng.context(GroupId(1)).unwrap();
    assert_eq!(ctx.transport_bytes(), 0);
    let sr = Rig::with_transport(context(2, false, 8, PsnAlignment::Resync), Transport::SR);
    let ctx = sr.eng.context(GroupId(1)).unwrap();
    assert_eq!(ctx.transport_bytes(), 2 * (256 * (256 + 1 + 64) + 256 * 32));
    // After a control message the profile stays.
    let mut late = started(Transport::Gbn, 1);
    let ctx = late.eng.context_mut(GroupId(1)).unwrap();
    ctx.set_transport(Transport::SR);
    assert_eq!(ctx.transport_bytes(), 0);
}

/// [SR-060] [CTL-040] An edge rebuilt for SR starts at the group's PSN set
/// before it, and an AllReduce runs on it without loss, SACK or resend.
#[test]
fn sr_060_rebuilt_edges_keep_the_start_psn() {
    let start = Psn::from_truncated(0x00ff_fff0);
    let cfg = context(2, false, 8, PsnAlignment::Resync);
    let mut rig = Rig::with_transport(cfg, Transport::Gbn);
    let ctx = rig.eng.context_mut(GroupId(1)).unwrap();
    ctx.set_start_psn(start);
    ctx.set_transport(Transport::SR);
    assert!(ctx.transport_bytes() > 0);
    for q in &mut rig.peers {
        let mut c = *q.config();
        c.sq_psn = start;
        c.rq_psn = start;
        c.transport = Transport::SR;
        *q = crate::roce::RcQp::new(c).unwrap();
        for _ in 0..32 {
            q.post_recv(crate::roce::WrId(0), alloc::vec![0; MSG])
                .unwrap();
        }
    }
    for p in 0..2 {
        rig.control(p, header(1, Collective::AllReduce, 0, 6));
        rig.peer_sends(p);
    }
    rig.rounds(2, &mut |_, _| false);
    for p in 0..2 {
        rig.data(p, 6);
    }
    rig.rounds(6, &mut |_, _| false);
    assert_results(&mut rig, 6);
    let c = rig.eng.counters();
    assert_eq!((c.tx_sacks, c.rx_sacks, c.tx_retransmits), (0, 0, 0));
    assert_eq!(c.drops(EngineDropReason::Transport), 0);
}

/// [SR-061] [SR-062] A rank's message lost on its way to the switch: the
/// edge keeps the messages after the gap, SACKs, and the rank resends
/// that message alone; the AllReduce completes.
#[test]
fn sr_061_edge_keeps_what_follows_a_lost_request() {
    let mut rig = started(Transport::SR, 6);
    rig.data(0, 6);
    rig.data(1, 6);
    let frames = rig.sent_by_peer(0);
    let mut data = 0;
    for f in frames {
        if is_data(&f) {
            data += 1;
            if data == 2 {
                continue;
            }
        }
        rig.eng.handle_frame(rig.now, 0, &f);
    }
    rig.peer_sends(1);
    rig.rounds(6, &mut |_, _| false);
    assert_results(&mut rig, 6);
    let c = rig.eng.counters();
    assert!(c.tx_sacks >= 1, "SACKs sent {}", c.tx_sacks);
    assert_eq!(c.drops(EngineDropReason::Transport), 0);
    let r0 = rig.peers[0].counters();
    assert_eq!(r0.tx_retransmits, 1, "the lost message alone");
    assert!(r0.rx_sacks >= 1);
}

/// A result lost on its way to rank 1 under `transport`: the engine's
/// counters after the AllReduce completes.
fn result_lost(transport: Transport) -> crate::engine::EngineCounters {
    let mut rig = started(transport, 6);
    rig.data(0, 6);
    rig.data(1, 6);
    rig.peer_sends(0);
    rig.peer_sends(1);
    let mut data = 0;
    rig.rounds(1, &mut |port, f| {
        if port == 1 && is_data(f) {
            data += 1;
            return data == 2;
        }
        false
    });
    rig.rounds(6, &mut |_, _| false);
    assert_results(&mut rig, 6);
    rig.eng.counters().clone()
}

/// [SR-061] [SR-062] A result lost on its way to a rank: the rank SACKs,
/// and the edge resends that result alone (go-back-N resends it and the
/// four after it).
#[test]
fn sr_061_edge_resends_only_the_lost_result() {
    let c = result_lost(Transport::SR);
    assert!(c.rx_sacks >= 1, "SACKs received {}", c.rx_sacks);
    assert_eq!(c.selective_resends, 1);
    assert_eq!(c.tx_retransmits, 1);
    let g = result_lost(Transport::Gbn);
    assert_eq!((g.rx_sacks, g.selective_resends), (0, 0));
    assert_eq!(g.tx_retransmits, 5);
}

/// The IPv4 ECN bits of a frame.
fn ecn(f: &[u8]) -> u8 {
    f[15] & 3
}

/// Marks a frame CE and fixes its IPv4 header checksum (the ICRC masks
/// the TOS byte).
fn mark_ce(f: &mut [u8]) {
    f[15] |= 3;
    f[24] = 0;
    f[25] = 0;
    let mut sum: u32 = f[14..34]
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    f[24..26].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// [CC-118] [CC-110] A Mode I context without congestion control sends
/// its data Not-ECT (unchanged); given the group's DCQCN at install, its
/// edges' data leaves ECT(0), a rank that sees it marked CE answers with a
/// CNP, and the edge's reaction point takes the CNP: counted, no drop.
#[test]
fn cc_116_edges_run_dcqcn_when_given() {
    use crate::roce::CcConfig;
    for cc in [None, Some(CcConfig::DEFAULT)] {
        let mut rig =
            Rig::with_transport(context(2, false, 8, PsnAlignment::Resync), Transport::Gbn);
        rig.eng.context_mut(GroupId(1)).unwrap().set_cc(cc);
        for q in &mut rig.peers {
            let mut c = *q.config();
            c.cc = cc;
            *q = crate::roce::RcQp::new(c).unwrap();
            for _ in 0..32 {
                q.post_recv(crate::roce::WrId(0), alloc::vec![0; MSG])
                    .unwrap();
            }
        }
        // DCQCN paces every requester (CC-112): time moves 1 µs a round.
        let mut results = 0;
        for round in 0..40 {
            if round == 4 {
                rig.data(0, 2);
                rig.data(1, 2);
            }
            rig.now += crate::time::Duration::from_micros(1);
            rig.eng.handle_timeout(rig.now);
            if round == 0 {
                for p in 0..2 {
                    rig.control(p, header(1, Collective::AllReduce, 0, 2));
                }
            }
            for p in 0..2 {
                rig.peers[p].handle_timeout(rig.now);
                rig.peer_sends(p);
            }
            for (port, mut f) in rig.sent_by_engine() {
                if is_data(&f) {
                    results += 1;
                    let want = if cc.is_some() { 2 } else { 0 };
                    assert_eq!(ecn(&f), want, "results leave ECT(0) with DCQCN only");
                    if cc.is_some() && port == 1 && results <= 2 {
                        mark_ce(&mut f);
                    }
                }
                rig.peers[port].handle_frame(rig.now, &f);
            }
        }
        assert_eq!(results, 4, "{cc:?}");
        assert_results(&mut rig, 2);
        let c = rig.eng.counters();
        let cnps = u64::from(cc.is_some());
        assert_eq!((c.rx_cnps, c.rate_cuts), (cnps, cnps), "{cc:?}");
        assert_eq!(c.drops(EngineDropReason::Transport), 0);
    }
}

/// A two-rank star, W = 2 (3 receives per edge), on SR: both controls of
/// a 12-message AllReduce in, then rank 0 posts all its data while rank 1
/// has not started; with `lose_first`, rank 0's first data message is
/// lost on its way to the switch.
fn sr_rank_0_runs_ahead(lose_first: bool) -> Rig {
    let mut rig = Rig::with_transport(context(2, false, 2, PsnAlignment::Resync), Transport::SR);
    for p in 0..2 {
        rig.control(p, header(1, Collective::AllReduce, 0, 12));
        rig.peer_sends(p);
    }
    rig.rounds(2, &mut |_, _| false);
    rig.data(0, 12);
    let mut first = lose_first;
    for f in rig.sent_by_peer(0) {
        if is_data(&f) && core::mem::take(&mut first) {
            continue;
        }
        rig.eng.handle_frame(rig.now, 0, &f);
    }
    rig
}

/// Whether `f` is a SACK (or, with `sack` false, an ACK) whose AETH
/// carries a finite credit (a code below 0x1F).
fn credited(f: &[u8], sack: bool) -> bool {
    let f = RoceFrame::parse(f).unwrap();
    let want = if sack {
        Opcode::RcSack
    } else {
        Opcode::RcAcknowledge
    };
    f.bth.opcode == want
        && matches!(
            f.ext.aeth.map(|a| a.syndrome),
            Some(crate::wire::Syndrome::Ack { credit }) if credit < 0x1f
        )
}

/// [SR-090] [SR-091] [M1-013] [RC-110] Under SR a Mode I edge still grants
/// its free receives in its ACKs: a rank far ahead of the other child
/// waits for credit (one stall) instead of meeting RNR NAKs, each
/// recycled buffer reaches it as a window update, and the AllReduce runs
/// with no RNR NAK, no drop and no retransmission anywhere.
#[test]
fn sr_090_a_fast_rank_waits_for_credit_not_rnr() {
    let mut rig = sr_rank_0_runs_ahead(false);
    rig.rounds(4, &mut |_, _| false);
    let r0 = rig.peers[0].counters().clone();
    assert_eq!(r0.sends_completed, 1 + 3, "control and three messages");
    assert_eq!(r0.credit_stalls, 1);
    assert_eq!(r0.rx_rnr_naks, 0);
    rig.data(1, 12);
    rig.rounds(40, &mut |_, _| false);
    assert_results(&mut rig, 12);
    for p in 0..2 {
        let c = rig.peers[p].counters();
        assert_eq!(c.rx_rnr_naks, 0, "rank {p}");
        assert_eq!(c.tx_retransmits, 0, "rank {p}");
        assert_eq!(c.total_drops(), 0, "rank {p}: {c:?}");
    }
    assert!(rig.peers[0].counters().rx_credit_updates >= 1);
    let e = rig.eng.counters();
    assert_eq!(e.drops(EngineDropReason::Transport), 0);
    assert_eq!((e.tx_retransmits, e.tx_sacks), (0, 0));
}

/// [SR-091] [SR-092] [RC-111] The first message of a rank running ahead is
/// lost: the edge keeps the two after it and its SACK carries its credit;
/// the rank resends that message alone and then waits for credit, never
/// for an RNR NAK, and the AllReduce completes.
#[test]
fn sr_091_an_edge_sack_carries_its_credit() {
    let mut rig = sr_rank_0_runs_ahead(true);
    let to_rank_0: Vec<Vec<u8>> = rig
        .sent_by_engine()
        .into_iter()
        .filter(|(port, _)| *port == 0)
        .map(|(_, f)| f)
        .collect();
    assert!(
        to_rank_0.iter().any(|f| credited(f, true)),
        "no SACK with a finite credit"
    );
    for f in &to_rank_0 {
        rig.peers[0].handle_frame(rig.now, f);
    }
    rig.peer_sends(0);
    rig.rounds(4, &mut |_, _| false);
    assert_eq!(rig.peers[0].counters().credit_stalls, 1);
    rig.data(1, 12);
    rig.rounds(40, &mut |_, _| false);
    assert_results(&mut rig, 12);
    for p in 0..2 {
        let c = rig.peers[p].counters();
        assert_eq!(c.rx_rnr_naks, 0, "rank {p}");
    }
    let r0 = rig.peers[0].counters();
    assert_eq!(r0.tx_retransmits, 1, "the lost message alone");
    assert!(r0.rx_sacks >= 1);
    assert_eq!(rig.eng.counters().drops(EngineDropReason::Transport), 0);
}
