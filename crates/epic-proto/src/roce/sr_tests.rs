//! Unit tests of the SR profile (SPEC §17.5): the same back-to-back pair as
//! `tests.rs`, both QPs running [`Transport::Sr`]. Each test names the SPEC
//! IDs it checks.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::vec;
use std::vec::Vec;

use proptest::prelude::*;

use super::tests::{completions, configs, pattern, qpn, Pair, Qp, Sent};
use super::*;
use crate::psn::Psn;
use crate::time::{Duration, Instant};
use crate::wire::{Opcode, RoceFrame, SackRepr, Syndrome};

fn sr_configs() -> (QpConfig, QpConfig) {
    let (mut a, mut b) = configs();
    a.transport = Transport::SR;
    b.transport = Transport::SR;
    (a, b)
}

fn sr_pair() -> Pair {
    let (a, b) = sr_configs();
    Pair::with(a, b)
}

fn psns(frames: &[Sent]) -> Vec<u32> {
    frames.iter().map(|s| s.psn).collect()
}

fn sack_of(frame: &Sent) -> SackRepr {
    RoceFrame::parse_verified_transport(&frame.bytes)
        .unwrap()
        .sack()
        .unwrap()
}

/// Posts one SEND of `len` bytes at A and a big enough receive at B.
fn send(p: &mut Pair, id: u64, len: usize) -> Vec<u8> {
    let msg = pattern(len, id as u8);
    p.b.post_recv(WrId(id), vec![0; 4096]).unwrap();
    p.a.post_send(WrId(id), SendOp::Send, msg.clone()).unwrap();
    msg
}

fn received(qp: &mut Qp) -> Vec<Vec<u8>> {
    completions(qp)
        .into_iter()
        .filter_map(|c| match c {
            Completion::Recv {
                status: WcStatus::Success,
                byte_len,
                mut buf,
                ..
            } => {
                buf.truncate(byte_len as usize);
                Some(buf)
            }
            _ => None,
        })
        .collect()
}

/// [SR-010]: go-back-N is the default; SR is refused with a window the
/// SACK cannot cover or an empty receive window.
#[test]
fn profile_is_chosen_in_the_config_and_validated() {
    let (a, _) = configs();
    assert_eq!(a.transport, Transport::Gbn);
    assert!(Qp::new(a).unwrap().rtt().is_none());
    let (mut s, _) = sr_configs();
    assert!(Qp::new(s).unwrap().rtt().is_some());
    s.max_unacked_psns = 1024;
    assert_eq!(
        s.validate(),
        Err(ConfigError::OutOfRange {
            field: "max_unacked_psns",
            value: 1024,
            max: 1023
        })
    );
    let (mut s, _) = sr_configs();
    s.transport = Transport::Sr(SrConfig {
        window_psns: 0,
        ..SrConfig::DEFAULT
    });
    assert_eq!(
        s.validate(),
        Err(ConfigError::Zero {
            field: "window_psns"
        })
    );
}

/// [SR-012] [SR-013] [SR-014] [SR-015] [WIRE-052]: a lost packet in the
/// middle of a message: the responder keeps what follows and answers with
/// one SACK; the requester resends that PSN only; the message is delivered
/// whole and in order once the gap fills, and acknowledged with an ACK.
#[test]
fn loss_gets_a_sack_and_one_selective_resend() {
    let mut p = sr_pair();
    let msg = send(&mut p, 1, 1500); // six packets at MTU 256
    let sent = p.a_to_b();
    assert_eq!(psns(&sent), [0, 1, 2, 3, 4, 5]);
    let mut kept = sent.clone();
    kept.remove(1);
    p.deliver_to_b(&kept);
    assert_eq!(p.b.expected_psn().value(), 1);
    assert_eq!(p.b.counters().rx_kept, 4);
    let acks = p.b_to_a();
    assert_eq!(acks.len(), 1, "one SACK for the whole gap");
    assert_eq!(acks[0].opcode, Opcode::RcSack);
    assert_eq!(acks[0].psn, 0, "BTH PSN = cumulative point");
    assert_eq!(acks[0].syndrome, Some(Syndrome::ACK));
    let sack = sack_of(&acks[0]);
    assert_eq!(sack.words(), &[0x7800_0000], "PSNs 2..=5 received");
    p.deliver_to_a(&acks);
    assert_eq!(p.a.counters().rx_sacks, 1);
    assert_eq!(p.a.counters().selective_resends, 1);
    let resent = p.a_to_b();
    assert_eq!(psns(&resent), [1], "only the hole is resent");
    assert!(resent[0].ack_req);
    p.deliver_to_b(&resent);
    assert_eq!(p.b.counters().rx_window_executed, 4);
    assert_eq!(p.b.counters().rx_executed, 6);
    let acks = p.b_to_a();
    assert_eq!(acks.len(), 1);
    assert_eq!(
        (acks[0].opcode, acks[0].psn),
        (Opcode::RcAcknowledge, 5),
        "gap closed: a plain ACK"
    );
    p.deliver_to_a(&acks);
    assert_eq!(received(&mut p.b), [msg]);
    assert_eq!(completions(&mut p.a)[0].status(), WcStatus::Success);
    let c = p.a.counters();
    assert_eq!((c.tx_retransmits, c.go_back_n, c.timeouts), (1, 0, 0));
    assert_eq!(p.b.counters().tx_sacks, 1);
    assert_eq!(p.a.poll_timeout(), None, "nothing in flight, no timer");
}

/// [SR-015]: a SACK that repeats a hole already resent does not resend it
/// again: only one reporting a packet sent after the resend would prove
/// the resend lost (RACK's rule).
#[test]
fn repeated_hole_is_not_resent_twice() {
    let mut p = sr_pair();
    send(&mut p, 1, 1500); // PSNs 0..=5
    let sent = p.a_to_b();
    p.deliver_to_b(&[sent[0].clone(), sent[2].clone(), sent[3].clone()]);
    let sack = p.b_to_a();
    p.deliver_to_a(&sack);
    assert_eq!(psns(&p.a_to_b()), [1], "resent, and lost again");
    p.deliver_to_b(&sent[4..]);
    let sack = p.b_to_a();
    assert_eq!(sack_of(&sack[0]).words(), &[0x7800_0000]);
    p.deliver_to_a(&sack);
    assert!(p.a_to_b().is_empty(), "4 and 5 left before the resend");
    assert_eq!(p.a.counters().selective_resends, 1);
    // The probe resends the newest PSN not reported received: the hole.
    assert!(p.fire_next_timer());
    assert_eq!(p.a.counters().probes, 1);
    assert_eq!(psns(&p.a_to_b()), [1]);
}

/// [SR-012] [SR-013]: packets arriving in reverse order are kept and the
/// messages delivered in order, each once, with nothing resent.
#[test]
fn reordering_delivers_in_order_without_resends() {
    let mut p = sr_pair();
    let m1 = send(&mut p, 1, 700);
    let m2 = send(&mut p, 2, 300);
    let mut sent = p.a_to_b();
    assert_eq!(sent.len(), 5);
    sent.reverse();
    p.deliver_to_b(&sent);
    assert_eq!(p.b.counters().rx_window_executed, 4);
    let acks = p.b_to_a();
    assert_eq!(psns(&acks), [4]);
    assert_eq!(acks[0].opcode, Opcode::RcAcknowledge);
    p.deliver_to_a(&acks);
    assert_eq!(received(&mut p.b), [m1, m2]);
    assert_eq!(completions(&mut p.a).len(), 2);
    assert_eq!(p.a.counters().tx_retransmits, 0);
}

/// [SR-012] [RC-051]: duplicates, in order or kept, are acknowledged and
/// never executed twice.
#[test]
fn duplicates_are_acknowledged_not_reexecuted() {
    let mut p = sr_pair();
    let msg = send(&mut p, 1, 1000);
    let sent = p.a_to_b();
    // 0, 2, 2, 3, 0, 1, 3, 1: a gap, kept duplicates, old duplicates.
    for i in [0, 2, 2, 3, 0, 1, 3, 1] {
        p.deliver_to_b(&sent[i..=i]);
    }
    assert_eq!(p.b.counters().rx_executed, 4);
    assert_eq!(p.b.counters().drops(DropReason::DuplicateRequest), 4);
    let acks = p.b_to_a();
    assert_eq!(psns(&acks), [3]);
    p.deliver_to_a(&acks);
    assert_eq!(received(&mut p.b), [msg]);
    p.settle();
    assert_eq!(p.a.counters().tx_retransmits, 0);
}

/// [SR-012]: a request further ahead than the window is dropped with its
/// own reason; it is recovered later.
#[test]
fn beyond_the_window_is_a_typed_drop() {
    let (a, mut b) = sr_configs();
    b.transport = Transport::Sr(SrConfig {
        window_psns: 4,
        ..SrConfig::DEFAULT
    });
    let mut p = Pair::with(a, b);
    let msg = send(&mut p, 1, 2000); // eight packets
    let sent = p.a_to_b();
    p.deliver_to_b(&sent[1..]);
    assert_eq!(p.b.counters().rx_kept, 3, "PSNs 1..=3");
    assert_eq!(p.b.counters().drops(DropReason::BeyondWindow), 4);
    for _ in 0..100 {
        p.settle();
        if !received(&mut p.b).is_empty() || !p.fire_next_timer() {
            break;
        }
    }
    assert_eq!(p.b.counters().messages_received, 1);
    assert_eq!(p.b.counters().rx_executed, 8);
    let _ = msg;
}

/// [SR-013] [RC-064]: a kept request refused for want of a receive (RNR)
/// stays expected; what followed it stays kept; the requester resends that
/// PSN only after the RNR wait.
#[test]
fn rnr_while_draining_keeps_the_rest() {
    let mut p = sr_pair();
    p.b.post_recv(WrId(1), vec![0; 64]).unwrap();
    for i in 0..3u64 {
        p.a.post_send(WrId(i), SendOp::Send, vec![i as u8; 10])
            .unwrap();
    }
    let sent = p.a_to_b(); // PSNs 0, 1, 2: one packet each
    p.deliver_to_b(&sent[1..]);
    p.deliver_to_b(&sent[..1]);
    assert_eq!(p.b.expected_psn().value(), 1, "PSN 1 found no receive");
    let out = p.b_to_a();
    assert_eq!(out[0].syndrome.map(|s| s.is_ack()), Some(false));
    assert!(matches!(out[0].syndrome, Some(Syndrome::RnrNak { .. })));
    assert_eq!(out[0].psn, 1);
    p.deliver_to_a(&out);
    p.b.post_recv(WrId(2), vec![0; 64]).unwrap();
    p.b.post_recv(WrId(3), vec![0; 64]).unwrap();
    assert!(p.fire_next_timer(), "the RNR wait");
    let resent = p.a_to_b();
    assert_eq!(psns(&resent), [1], "only the refused PSN");
    p.deliver_to_b(&resent);
    assert_eq!(p.b.counters().rx_executed, 3, "PSN 2 came from the window");
    p.settle();
    assert_eq!(received(&mut p.b).len(), 3);
    assert_eq!(completions(&mut p.a).len(), 3);
}

/// [SR-013] [SR-015]: a PSN a SACK once reported and the responder then
/// refused (RNR while draining) is missing again when a later SACK no
/// longer reports it, even if the RNR NAK itself was lost: it is resent at
/// once, not after a timeout.
#[test]
fn a_sack_that_stops_reporting_a_psn_makes_it_a_hole_again() {
    let mut p = sr_pair();
    p.b.post_recv(WrId(1), vec![0; 64]).unwrap();
    for i in 0..3u64 {
        p.a.post_send(WrId(i), SendOp::Send, vec![i as u8; 10])
            .unwrap();
    }
    let sent = p.a_to_b(); // PSNs 0, 1, 2
    p.deliver_to_b(&sent[1..]);
    let sack = p.b_to_a();
    assert_eq!(sack_of(&sack[0]).words(), &[0x6000_0000], "1 and 2 kept");
    p.deliver_to_a(&sack);
    let resent = p.a_to_b();
    assert_eq!(psns(&resent), [0]);
    p.deliver_to_b(&resent); // 0 runs, 1 finds no receive: RNR
    let out = p.b_to_a();
    assert!(matches!(out[0].syndrome, Some(Syndrome::RnrNak { .. })));
    assert_eq!(out[1].opcode, Opcode::RcSack);
    assert_eq!(sack_of(&out[1]).words(), &[0x4000_0000], "only 2 kept now");
    p.deliver_to_a(&out[1..]); // the RNR NAK is lost
    assert_eq!(psns(&p.a_to_b()), [1], "1 is a hole again");
    assert_eq!(p.a.counters().timeouts, 0);
}

/// A clean round trip of `rtt`: one packet out, its ACK back `rtt` later.
fn warm_up(p: &mut Pair, rtt: Duration) {
    send(p, 100, 10);
    let sent = p.a_to_b();
    p.now += rtt;
    p.deliver_to_b(&sent);
    let acks = p.b_to_a();
    p.deliver_to_a(&acks);
    received(&mut p.b);
    completions(&mut p.a);
}

/// [SR-016] [SR-017] [CC-006]: a lost last packet is recovered by the
/// probe about 2·SRTT after it was sent, long before the retransmission
/// timeout.
#[test]
fn tail_loss_is_recovered_by_the_probe_before_the_rto() {
    let mut p = sr_pair();
    warm_up(&mut p, Duration::from_micros(8));
    let rtt = p.a.rtt().unwrap();
    assert_eq!(rtt.srtt(), Some(Duration::from_micros(8)));
    assert_eq!(p.a.counters().rtt_samples, 1);
    let msg = send(&mut p, 1, 700); // PSNs 1, 2, 3
    let sent = p.a_to_b();
    let t0 = p.now;
    p.deliver_to_b(&sent[..2]); // the last one is lost
    assert!(p.b_to_a().is_empty(), "no AckReq, no gap: silence");
    let rto_at = t0 + p.a.rtt().unwrap().rto();
    assert!(p.fire_next_timer());
    assert_eq!(p.now, t0 + Duration::from_micros(16), "PTO = 2·SRTT");
    assert!(p.now < rto_at);
    assert_eq!(p.a.counters().probes, 1);
    let probe = p.a_to_b();
    assert_eq!(psns(&probe), [3]);
    assert!(probe[0].ack_req);
    p.deliver_to_b(&probe);
    p.settle();
    assert_eq!(received(&mut p.b), [msg]);
    let c = p.a.counters();
    assert_eq!((c.timeouts, c.tx_retransmits), (0, 1));
}

/// [SR-015] [SR-017]: the one SACK reporting a gap is lost; the probe
/// draws another, and the hole is resent once.
#[test]
fn lost_sack_is_recovered_by_the_probe() {
    let mut p = sr_pair();
    warm_up(&mut p, Duration::from_micros(8));
    let msg = send(&mut p, 1, 1000); // PSNs 1..=4
    let sent = p.a_to_b();
    let mut kept = sent.clone();
    kept.remove(1);
    p.deliver_to_b(&kept);
    let lost_sack = p.b_to_a();
    assert_eq!(lost_sack[0].opcode, Opcode::RcSack);
    assert!(p.fire_next_timer());
    assert_eq!(p.a.counters().probes, 1);
    let probe = p.a_to_b();
    assert_eq!(psns(&probe), [4]);
    p.deliver_to_b(&probe);
    let sack = p.b_to_a();
    assert_eq!(sack[0].opcode, Opcode::RcSack);
    p.deliver_to_a(&sack);
    assert_eq!(psns(&p.a_to_b()), [2], "the hole, once");
    // (The resend above was taken off the wire: lost too. The next SACK
    // can only come from a new probe or the timeout.)
    let mut rounds = 0;
    while received(&mut p.b).is_empty() {
        assert!(p.fire_next_timer());
        p.settle();
        rounds += 1;
        assert!(rounds < 10);
    }
    let _ = msg;
    assert_eq!(p.b.counters().rx_executed, 5);
}

/// [SR-016] [CC-003]: the ACK of a resent packet is not a round-trip
/// sample (Karn's rule); the ACK of a packet sent once is.
#[test]
fn karn_rule_skips_resent_packets() {
    let mut p = sr_pair();
    send(&mut p, 1, 10);
    let lost = p.a_to_b();
    assert_eq!(lost.len(), 1);
    // No sample yet: the probe fires at the initial timeout.
    assert!(p.fire_next_timer());
    assert_eq!(p.now, Instant::ZERO + Duration::from_millis(1));
    let resent = p.a_to_b();
    assert_eq!(psns(&resent), [0]);
    p.now += Duration::from_micros(3);
    p.deliver_to_b(&resent);
    let acks = p.b_to_a();
    p.deliver_to_a(&acks);
    let c = p.a.counters();
    assert_eq!((c.rtt_samples, c.rtt_ambiguous), (0, 1));
    assert_eq!(p.a.rtt().unwrap().srtt(), None);
    assert_eq!(p.a.rtt().unwrap().counters().ambiguous_skipped, 1);
    warm_up(&mut p, Duration::from_micros(5));
    assert_eq!(p.a.counters().rtt_samples, 1);
    assert_eq!(p.a.rtt().unwrap().srtt(), Some(Duration::from_micros(5)));
}

/// [SR-018] [SR-020] [CC-004]: when the probe is lost too, the
/// retransmission timeout backs off and resends every hole it knows of:
/// U and each PSN in flight no SACK reported, at once.
#[test]
fn timeout_resends_every_hole() {
    let mut p = sr_pair();
    warm_up(&mut p, Duration::from_micros(8));
    send(&mut p, 1, 700); // PSNs 1, 2, 3, all lost
    assert_eq!(p.a_to_b().len(), 3);
    // Probes at 16 and 16 + 32 µs, both lost; the timeout at 50 µs.
    assert!(p.fire_next_timer());
    assert_eq!(psns(&p.a_to_b()), [3], "the first probe, lost");
    assert!(p.fire_next_timer());
    assert_eq!(psns(&p.a_to_b()), [3], "the second probe, lost");
    assert!(p.fire_next_timer());
    let c = p.a.counters();
    assert_eq!(
        (c.probes, c.timeouts, c.timeout_resends),
        (2, 1, 2),
        "3 was probed 2 µs ago (< SRTT): not yet lost"
    );
    assert_eq!(p.a.rtt().unwrap().backoff_exponent(), 1);
    let resent = p.a_to_b();
    assert_eq!(psns(&resent), [1, 2], "every hole, in PSN order");
    assert!(resent.iter().all(|f| f.ack_req));
    p.deliver_to_b(&resent);
    let ack = p.b_to_a();
    assert_eq!(psns(&ack), [2], "one ACK for both");
    p.deliver_to_a(&ack);
    assert_eq!(p.b.counters().rx_executed, 3);
    // 3 comes from the next probe.
    assert!(p.fire_next_timer());
    p.settle();
    assert_eq!(p.b.counters().rx_executed, 4);
    assert_eq!(p.a.counters().timeouts, 1, "recovered in one expiry");
}

/// [SR-020]: a timeout does not resend what a SACK reported received,
/// nor a PSN sent less than one SRTT before it.
#[test]
fn timeout_skips_what_arrived_and_what_is_young() {
    let mut p = sr_pair();
    warm_up(&mut p, Duration::from_micros(8));
    send(&mut p, 1, 1000); // PSNs 1..=4
    let sent = p.a_to_b();
    p.deliver_to_b(&sent[2..3]); // only 3 arrives
    let sack = p.b_to_a();
    assert_eq!(sack[0].opcode, Opcode::RcSack);
    p.deliver_to_a(&sack); // progress: 3 reported
                           // 1 and 2 were sent before 3, which arrived: resent at once (RACK).
    assert_eq!(psns(&p.a_to_b()), [1, 2]);
    // A new message goes out just before the timeout; it is too young to
    // count as lost.
    let rto = p.a.rtt().unwrap().rto();
    p.now += Duration::from_nanos(rto.as_nanos() - 1_000);
    send(&mut p, 2, 10); // PSN 5
    assert_eq!(psns(&p.a_to_b()), [5]);
    p.now += Duration::from_micros(1);
    p.a.handle_timeout(p.now);
    assert_eq!(p.a.counters().timeouts, 1);
    assert_eq!(
        psns(&p.a_to_b()),
        [1, 2, 4],
        "U, the resent hole and 4; not 3 (reported) nor 5 (1 µs old)"
    );
    assert_eq!(p.a.counters().timeout_resends, 3);
}

/// [SR-021] [SR-016] [CC-003]: an acknowledgement whose newest
/// transmission is a resend still gives a clean sample, from the newest
/// PSN it covers that was sent once.
#[test]
fn samples_come_from_packets_sent_once() {
    let mut p = sr_pair();
    warm_up(&mut p, Duration::from_micros(8));
    send(&mut p, 1, 1000); // PSNs 1..=4
    let t0 = p.now;
    let sent = p.a_to_b();
    p.now += Duration::from_micros(4);
    p.deliver_to_b(&sent[1..3]); // 2, 3 arrive; 1 lost; 4 delayed
    let sack = p.b_to_a();
    p.deliver_to_a(&sack);
    assert_eq!(p.a.counters().rtt_samples, 2, "warm-up and the SACK of 3");
    let resent = p.a_to_b();
    assert_eq!(psns(&resent), [1]);
    p.now = t0 + Duration::from_micros(12);
    p.deliver_to_b(&sent[3..]); // 4, late
    p.deliver_to_b(&resent);
    let ack = p.b_to_a();
    assert_eq!(ack.last().unwrap().opcode, Opcode::RcAcknowledge);
    let before = p.a.rtt().unwrap().counters().samples;
    p.deliver_to_a(&ack[ack.len() - 1..]);
    let c = p.a.counters();
    assert_eq!(
        (c.rtt_samples, c.rtt_ambiguous),
        (3, 0),
        "the ACK's newest send is 1's resend; 4 was sent once and gives the sample"
    );
    assert_eq!(p.a.rtt().unwrap().counters().samples, before + 1);
}

/// [SR-023] [SR-017]: while nothing makes progress the probe repeats at
/// doubling intervals (PTO, 2·PTO, …) as long as it comes before the
/// retransmission timer; after a timeout the probes start again from PTO;
/// progress stops them.
#[test]
fn probes_repeat_at_doubling_intervals() {
    let mut p = sr_pair();
    warm_up(&mut p, Duration::from_micros(8));
    let t0 = p.now;
    send(&mut p, 1, 10); // PSN 1, lost again and again
    assert_eq!(p.a_to_b().len(), 1);
    let mut at = Vec::new();
    let mut out = Vec::new();
    while p.a.counters().timeouts < 2 {
        assert!(p.fire_next_timer());
        out = p.a_to_b();
        assert_eq!(psns(&out), [1]);
        at.push(((p.now - t0).as_nanos() / 1000, p.a.counters().timeouts));
    }
    // PTO 16 µs; the timeout at 50 µs, then 100 µs later (backed off).
    assert_eq!(
        at,
        [(16, 0), (48, 0), (50, 1), (66, 1), (98, 1), (150, 2)],
        "(µs since the send, timeouts so far)"
    );
    assert_eq!(p.a.counters().probes, 4);
    p.deliver_to_b(&out);
    p.settle();
    assert_eq!(
        p.a.poll_timeout(),
        None,
        "progress: nothing in flight, no probe"
    );
}

/// [SR-022] [CC-007]: progress ends a backoff even when the
/// acknowledgement gives no clean sample (everything it covers was
/// resent), so the next timeout is the base timeout again.
#[test]
fn progress_ends_the_backoff() {
    let mut p = sr_pair();
    warm_up(&mut p, Duration::from_micros(8));
    let base = p.a.rtt().unwrap().rto();
    send(&mut p, 1, 10); // PSN 1, lost
    assert_eq!(p.a_to_b().len(), 1);
    while p.a.counters().timeouts == 0 {
        assert!(p.fire_next_timer()); // probes, lost
        if p.a.counters().timeouts == 0 {
            p.a_to_b();
        }
    }
    assert_eq!(p.a.rtt().unwrap().backoff_exponent(), 1);
    let resent = p.a_to_b();
    assert_eq!(psns(&resent), [1]);
    p.deliver_to_b(&resent);
    let ack = p.b_to_a();
    p.deliver_to_a(&ack);
    let c = p.a.counters();
    assert_eq!(c.rtt_ambiguous, 1, "1 was resent: no clean sample");
    assert_eq!(c.backoff_ends, 1);
    let rtt = p.a.rtt().unwrap();
    assert_eq!(rtt.backoff_exponent(), 0);
    assert_eq!(rtt.rto(), base);
    assert_eq!(rtt.counters().backoff_ends_on_progress, 1);
}

/// [SR-015] [RC-035]: a GBN QP still drops a SACK; an SR QP drops a SACK
/// whose cumulative point was never sent, or is stale.
#[test]
fn sack_judged_like_an_ack() {
    use crate::testing::FrameBuilder;
    use crate::wire::EthernetAddress;
    use core::net::Ipv4Addr;
    let mut p = sr_pair();
    send(&mut p, 1, 10);
    let _ = p.a_to_b(); // PSN 0 in flight
    let frame = |sack: &SackRepr| {
        FrameBuilder::new(Opcode::RcSack)
            .src_mac(EthernetAddress([2, 0, 0, 0, 0, 0xb]))
            .dst_mac(EthernetAddress([2, 0, 0, 0, 0, 0xa]))
            .src_ip(Ipv4Addr::new(10, 0, 0, 2))
            .dst_ip(Ipv4Addr::new(10, 0, 0, 1))
            .dest_qp(qpn(0x11))
            .sack(sack)
            .build()
    };
    p.a.handle_frame(p.now, &frame(&SackRepr::new(Psn::from_truncated(5))));
    assert_eq!(p.a.counters().drops(DropReason::GhostResponse), 1);
    p.a.handle_frame(p.now, &frame(&SackRepr::new(Psn::ZERO.sub(3))));
    assert_eq!(p.a.counters().drops(DropReason::StaleResponse), 1);
    p.a.handle_frame(p.now, &frame(&SackRepr::new(Psn::ZERO)));
    assert_eq!(p.a.counters().rx_sacks, 1);
    assert_eq!(p.a.outstanding_sends(), 0, "C = 0 acknowledges PSN 0");
}

/// Runs one SR pair over a channel that loses, duplicates and reorders
/// frames as `faults` says, until every message is delivered; the faults
/// stop after a while so the run ends. Returns the messages B received.
fn lossy_run(sizes: &[usize], faults: &[u8], loss_pct: u8) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, Qp) {
    let (a, b) = sr_configs();
    let mut p = Pair::with(a, b);
    let mut sent_msgs = Vec::new();
    for (i, len) in sizes.iter().enumerate() {
        p.b.post_recv(WrId(i as u64), vec![0; 2048]).unwrap();
        let m = pattern(*len, i as u8);
        p.a.post_send(WrId(i as u64), SendOp::Send, m.clone())
            .unwrap();
        sent_msgs.push(m);
    }
    let mut fate = faults.iter().copied().cycle();
    let mut got = Vec::new();
    let mut wire: Vec<(bool, Sent)> = Vec::new(); // (to B?, frame)
    for round in 0..20_000 {
        let faulty = round < 2_000;
        for (to_b, frames) in [(true, p.a_to_b()), (false, p.b_to_a())] {
            for f in frames {
                let r = fate.next().unwrap_or(0);
                if faulty && r % 100 < loss_pct {
                    continue;
                }
                if faulty && r % 7 == 0 {
                    wire.push((to_b, f.clone()));
                }
                wire.push((to_b, f));
            }
        }
        if wire.is_empty() {
            got.extend(received(&mut p.b));
            let done = got.len() == sizes.len() && p.a.outstanding_sends() == 0;
            if done || !p.fire_next_timer() {
                break;
            }
            continue;
        }
        // Deliver one frame, not always the oldest: reordering.
        let r = usize::from(fate.next().unwrap_or(0));
        let i = if faulty { r % wire.len().min(4) } else { 0 };
        let (to_b, f) = wire.remove(i);
        if to_b {
            p.b.handle_frame(p.now, &f.bytes);
        } else {
            p.a.handle_frame(p.now, &f.bytes);
        }
        p.now += Duration::from_nanos(200);
        if round % 64 == 0 && p.a.poll_timeout().is_some_and(|t| t <= p.now) {
            p.a.handle_timeout(p.now);
        }
    }
    got.extend(received(&mut p.b));
    (sent_msgs, got, p.a)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// [SR-012] [SR-013] [SR-015] [SR-017] [SR-018]: over a channel that
    /// loses, duplicates and reorders frames, an SR pair delivers every
    /// message exactly once, in order, byte-exact, and completes every send.
    #[test]
    fn lossy_channel_delivers_every_message_once_in_order(
        sizes in proptest::collection::vec(0usize..1500, 1..12),
        faults in proptest::collection::vec(any::<u8>(), 16..64),
        loss_pct in 0u8..30,
    ) {
        let (sent, got, mut a) = lossy_run(&sizes, &faults, loss_pct);
        prop_assert_eq!(&got, &sent);
        let done = completions(&mut a);
        prop_assert_eq!(done.len(), sizes.len());
        prop_assert!(done.iter().all(|c| c.status() == WcStatus::Success));
        prop_assert_eq!(a.counters().go_back_n, 0);
    }
}

/// [SR-014] [RC-080]: a responder that resyncs after receiving a request
/// whose acknowledgement is still due (a host that resyncs as soon as it
/// holds an invocation's last result) still sends it, of the new
/// cumulative point, as go-back-N sends the responses it has queued. The
/// sender is acknowledged at once instead of after its timeout.
#[test]
fn a_resync_keeps_the_acknowledgement_that_was_due() {
    let mut p = sr_pair();
    let msg = send(&mut p, 1, 200); // one packet, AckReq on the last
    let sent = p.a_to_b();
    assert_eq!(psns(&sent), [0]);
    p.deliver_to_b(&sent);
    assert_eq!(received(&mut p.b), [msg]);
    // Both ends move to PSN 10 before B has sent its ACK.
    p.b.resync(Psn::try_new(10).unwrap(), Psn::try_new(10).unwrap())
        .unwrap();
    let acks = p.b_to_a();
    assert_eq!(acks.len(), 1, "the ACK that was due");
    assert_eq!(acks[0].opcode, Opcode::RcAcknowledge);
    assert_eq!(acks[0].psn, 9, "of the new cumulative point");
    assert_eq!(acks[0].syndrome, Some(Syndrome::ACK));
}

/// [SR-081] With `beyond_psns` = 2 the requester sends at most 2 PSNs past
/// the newest one the responder is known to hold: 0 and 1 of six; a SACK
/// reporting 1 (0 lost) resends 0 and lets 2 and 3 go; the ACK of 3, 4 and
/// 5. The default (0) sends all six at once (the other tests).
#[test]
fn beyond_psns_limits_new_psns_past_what_the_responder_holds() {
    let (mut a, b) = sr_configs();
    a.transport = Transport::Sr(SrConfig {
        beyond_psns: 2,
        ..SrConfig::DEFAULT
    });
    let mut p = Pair::with(a, b);
    let msg = send(&mut p, 1, 1500); // PSNs 0..=5 at MTU 256
    let sent = p.a_to_b();
    assert_eq!(psns(&sent), [0, 1]);
    p.deliver_to_b(&sent[1..]);
    let sack = p.b_to_a();
    assert_eq!(sack[0].opcode, Opcode::RcSack);
    p.deliver_to_a(&sack);
    let sent = p.a_to_b();
    assert_eq!(psns(&sent), [0, 2, 3], "the hole, then two past 1");
    p.deliver_to_b(&sent);
    let acks = p.b_to_a();
    p.deliver_to_a(&acks);
    let sent = p.a_to_b();
    assert_eq!(psns(&sent), [4, 5]);
    p.deliver_to_b(&sent);
    p.settle();
    assert_eq!(received(&mut p.b), [msg]);
}
