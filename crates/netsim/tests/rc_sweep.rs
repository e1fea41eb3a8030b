//! RC endpoints over simulated links: random messages of every operation
//! and size, delivered exactly once, in order and byte-exact under loss,
//! reordering and duplication; errors end runs instead of hanging. Both
//! transport profiles run: go-back-N (`sweep_*`) and selective
//! retransmission (`sr_sweep_*`), on the same seeds and plans.
//!
//! The full sweep (4 loss rates × 50 seeds × 1,000 messages per profile)
//! runs with `EPIC_RC_SWEEP=full` in release mode, as `scripts/test-all`
//! does: `EPIC_RC_SWEEP=full cargo test --release -p netsim --test rc_sweep`.
//! Without it, a short sweep (3 seeds × 200 messages per rate) runs.
//! `--nocapture` prints each rate's figures, retransmissions per lost frame
//! among them.
//!
//! SPEC: [RC-020] [RC-030] [RC-032] [RC-040] [RC-041] [RC-046] [RC-050]
//! [RC-051] [RC-052] [RC-055] [RC-060] [RC-061] [RC-062] [RC-070] [RC-071]
//! (go-back-N); [SR-010] [SR-012] [SR-013] [SR-014] [SR-015] [SR-016]
//! [SR-017] [SR-018] (selective retransmission)
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod rc_common;

use epic_proto::roce::{DropReason, Mtu, QpState, Transport, WcStatus};
use epic_proto::time::{Duration, Instant};
use epic_proto::Psn;
use netsim::{Direction, LinkConfig, NodeId, PortId, RunOutcome, Sim};
use rc_common::{plan, qp_pair, qp_pair_with, AppConfig, Host, Rng};

struct Sweep {
    seeds: u64,
    messages: usize,
}

fn sweep() -> Sweep {
    match std::env::var("EPIC_RC_SWEEP").as_deref() {
        Ok("full") => Sweep {
            seeds: 50,
            messages: 1000,
        },
        _ => Sweep {
            seeds: 3,
            messages: 200,
        },
    }
}

/// What one run measured.
#[derive(Debug, Default, Clone, Copy)]
struct RunStats {
    virtual_ns: u64,
    frames: u64,
    lost: u64,
    retransmits: u64,
    seq_naks: u64,
    rnr_naks: u64,
    timeouts: u64,
    gap_naks: u64,
    silent_drops: u64,
    /// Lost frames that were requests: each direction's losses split in
    /// proportion to the requests among its frames (losses are drawn per
    /// frame, whatever it carries).
    lost_requests: f64,
    sacks: u64,
    probes: u64,
    selective: u64,
    wrapped: bool,
}

/// Runs `messages` random messages (half each way) over one link with the
/// given fault rates and checks every invariant; returns what happened.
fn run(seed: u64, messages: usize, loss: f64, transport: Transport) -> RunStats {
    let mut rng = Rng(seed);
    let mtu = Mtu::Mtu4096;
    let max_len = 1 << 20;
    let plan_a = plan(&mut rng, messages / 2, max_len);
    let plan_b = plan(&mut rng, messages - messages / 2, max_len);
    // Start close below 2^24 so that most runs wrap the PSN.
    let a_psn = Psn::try_new(Psn::MASK - rng.range(0, 2_000) as u32).unwrap();
    let b_psn = Psn::try_new(Psn::MASK - rng.range(0, 2_000) as u32).unwrap();
    let (ca, cb) = qp_pair_with(mtu, a_psn, b_psn, transport);
    let app = AppConfig {
        window: 8,
        recvs: 4,
        recv_len: max_len,
        // Longer than the 10 µs RNR timer: the receive queue runs dry now
        // and then, and RNR NAKs are exercised.
        repost_delay: Duration::from_micros(30),
    };
    let mut sim = Sim::new(seed);
    let a = sim.add_node(Host::new(ca, app, plan_a.clone(), plan_b.clone(), seed ^ 1));
    let b = sim.add_node(Host::new(cb, app, plan_b.clone(), plan_a.clone(), seed ^ 2));
    let link = LinkConfig::lossy(loss, 0.02, 0.01)
        .with_bandwidth(100_000_000_000)
        .with_latency(Duration::from_micros(1))
        .with_queue(4);
    let l = sim.connect((a, PortId(0)), (b, PortId(0)), link).unwrap();
    let limit = Instant::ZERO + Duration::from_secs(600);
    let outcome = sim.run_while(limit, |s| !(host(s, a).finished() && host(s, b).finished()));
    let (ha, hb) = (host(&sim, a), host(&sim, b));
    let ctx = format!("{transport:?} seed {seed} loss {loss}");
    for h in [ha, hb] {
        assert!(
            h.errors.is_empty(),
            "{ctx}: {:?}",
            &h.errors[..h.errors.len().min(5)]
        );
        assert!(
            h.error_completions.is_empty(),
            "{ctx}: {:?}",
            h.error_completions
        );
        assert_eq!(h.qp.state(), QpState::ReadyToSend, "{ctx}");
    }
    assert_eq!(
        outcome,
        RunOutcome::Stopped,
        "{ctx}: did not finish (sent {}/{}, {}/{}; received {}/{})",
        ha.sends_done,
        ha.plan.len(),
        hb.sends_done,
        hb.plan.len(),
        ha.recvs_done,
        hb.recvs_done
    );
    // Exactly once: every request PSN executed once, every message counted
    // once, every write in place.
    for (sender, receiver) in [(ha, hb), (hb, ha)] {
        let packets: u64 = sender.plan.iter().map(|m| m.packets(mtu)).sum();
        let c = receiver.qp.counters();
        assert_eq!(c.rx_executed, packets, "{ctx}: executed packets");
        assert_eq!(c.messages_received, sender.plan.len() as u64, "{ctx}");
        let errs = receiver.check_region();
        assert!(errs.is_empty(), "{ctx}: {errs:?}");
        assert_eq!(
            sender.qp.counters().sends_completed,
            sender.plan.len() as u64
        );
    }
    let (ca, cb) = (ha.qp.counters(), hb.qp.counters());
    let ab = sim.link_stats(l, Direction::AtoB).unwrap();
    let ba = sim.link_stats(l, Direction::BtoA).unwrap();
    let requests_lost = |lost: u64, frames: u64, requests: u64| {
        lost as f64 * requests as f64 / frames.max(1) as f64
    };
    RunStats {
        lost_requests: requests_lost(ab.lost.frames, ab.transmitted.frames, ca.tx_requests)
            + requests_lost(ba.lost.frames, ba.transmitted.frames, cb.tx_requests),
        sacks: ca.rx_sacks + cb.rx_sacks,
        probes: ca.probes + cb.probes,
        selective: ca.selective_resends + cb.selective_resends,
        virtual_ns: sim.now().as_nanos(),
        frames: ab.transmitted.frames + ba.transmitted.frames,
        lost: ab.lost.frames + ba.lost.frames,
        retransmits: ca.tx_retransmits + cb.tx_retransmits,
        seq_naks: ca.rx_seq_naks + cb.rx_seq_naks,
        rnr_naks: ca.rx_rnr_naks + cb.rx_rnr_naks,
        timeouts: ca.timeouts + cb.timeouts,
        gap_naks: ca.drops(DropReason::OutOfSequence) + cb.drops(DropReason::OutOfSequence),
        silent_drops: ca.drops(DropReason::OutOfSequenceSilent)
            + cb.drops(DropReason::OutOfSequenceSilent),
        wrapped: ha.qp.send_psn().value() < a_psn.value()
            || hb.qp.send_psn().value() < b_psn.value(),
    }
}

fn host(sim: &Sim<Host>, id: NodeId) -> &Host {
    sim.node(id).unwrap()
}

fn sweep_at(loss: f64, transport: Transport) -> RunStats {
    let s = sweep();
    let mut total = RunStats::default();
    let mut wrapped = 0;
    let mut virtual_ns = 0;
    for seed in 0..s.seeds {
        let r = run(
            0x5eed_0000 + seed * 7919 + (loss * 1000.0) as u64,
            s.messages,
            loss,
            transport,
        );
        total.frames += r.frames;
        total.lost += r.lost;
        total.lost_requests += r.lost_requests;
        total.retransmits += r.retransmits;
        total.seq_naks += r.seq_naks;
        total.rnr_naks += r.rnr_naks;
        total.timeouts += r.timeouts;
        total.sacks += r.sacks;
        total.probes += r.probes;
        total.selective += r.selective;
        total.virtual_ns = total.virtual_ns.max(r.virtual_ns);
        virtual_ns += r.virtual_ns;
        wrapped += usize::from(r.wrapped);
    }
    let name = match transport {
        Transport::Gbn => "GBN",
        Transport::Sr(_) => "SR",
    };
    println!(
        "{name} loss {loss}: {} seeds x {} messages: frames {} lost {} (requests ~{:.0}) \
         retransmits {} ({:.2} per lost frame, {:.2} per lost request) seq NAKs {} SACKs {} \
         selective {} probes {} RNR NAKs {} timeouts {} PSN wrapped in {wrapped} runs, \
         longest run {:.3} ms, all runs {:.3} ms virtual",
        s.seeds,
        s.messages,
        total.frames,
        total.lost,
        total.lost_requests,
        total.retransmits,
        total.retransmits as f64 / total.lost.max(1) as f64,
        total.retransmits as f64 / total.lost_requests.max(1.0),
        total.seq_naks,
        total.sacks,
        total.selective,
        total.probes,
        total.rnr_naks,
        total.timeouts,
        total.virtual_ns as f64 / 1e6,
        virtual_ns as f64 / 1e6
    );
    // The sweep must reach the paths it claims to test.
    assert!(wrapped > 0, "no run wrapped the PSN");
    assert!(total.rnr_naks > 0, "no RNR NAK was exercised");
    if loss > 0.0 {
        assert!(total.lost > 0 && total.retransmits > 0);
        match transport {
            Transport::Gbn => assert!(total.seq_naks > 0),
            Transport::Sr(_) => assert!(total.sacks > 0 && total.selective > 0),
        }
    }
    total
}

#[test]
fn sweep_no_loss() {
    sweep_at(0.0, Transport::Gbn);
}

#[test]
fn sweep_loss_1_percent() {
    sweep_at(0.01, Transport::Gbn);
}

#[test]
fn sweep_loss_5_percent() {
    sweep_at(0.05, Transport::Gbn);
}

#[test]
fn sweep_loss_15_percent() {
    sweep_at(0.15, Transport::Gbn);
}

#[test]
fn sr_sweep_no_loss() {
    sweep_at(0.0, Transport::SR);
}

#[test]
fn sr_sweep_loss_1_percent() {
    sweep_at(0.01, Transport::SR);
}

#[test]
fn sr_sweep_loss_5_percent() {
    sweep_at(0.05, Transport::SR);
}

/// [SR-015] [SR-017] [SR-018]: issue 22's target. At 15 % loss (with the
/// sweep's 2 % reordering and 1 % duplication) SR retransmits at most 1.3
/// packets per lost frame; go-back-N's figure is printed beside it.
#[test]
fn sr_sweep_loss_15_percent() {
    let sr = sweep_at(0.15, Transport::SR);
    let ratio = sr.retransmits as f64 / sr.lost as f64;
    assert!(ratio <= 1.3, "SR retransmitted {ratio:.2} per lost frame");
}

/// [RC-041] [RC-071]: when the link dies for good, both sides exhaust
/// their retries and end with error completions; the simulation goes idle
/// instead of hanging.
#[test]
fn dead_link_ends_in_error_completions() {
    let mut rng = Rng(99);
    let plan_a = plan(&mut rng, 40, 200_000);
    let plan_b = plan(&mut rng, 40, 200_000);
    let (mut ca, mut cb) = qp_pair(Mtu::Mtu1024, Psn::ZERO, Psn::ZERO);
    ca.retry_cnt = 3;
    cb.retry_cnt = 3;
    let app = AppConfig {
        window: 8,
        recvs: 8,
        recv_len: 200_000,
        repost_delay: Duration::ZERO,
    };
    let mut sim = Sim::new(7);
    let a = sim.add_node(Host::new(ca, app, plan_a.clone(), plan_b.clone(), 1));
    let b = sim.add_node(Host::new(cb, app, plan_b, plan_a, 2));
    let l = sim
        .connect((a, PortId(0)), (b, PortId(0)), LinkConfig::default())
        .unwrap();
    sim.run_until(Instant::ZERO + Duration::from_micros(50));
    for dir in [Direction::AtoB, Direction::BtoA] {
        sim.set_link_config(l, dir, LinkConfig::default().with_loss(1.0))
            .unwrap();
    }
    let outcome = sim.run_until_idle(Instant::ZERO + Duration::from_secs(60));
    assert_eq!(outcome, RunOutcome::Idle, "must go idle, not hang");
    for id in [a, b] {
        let h = host(&sim, id);
        assert!(h.errors.is_empty(), "{:?}", h.errors);
        assert_eq!(h.qp.state(), QpState::Error);
        assert_eq!(h.error_completions[0].1, WcStatus::RetryExceeded);
        assert!(h.error_completions[1..]
            .iter()
            .all(|(_, s)| *s == WcStatus::Flushed));
        assert!(h.sends_done < h.plan.len());
        assert_eq!(h.qp.counters().timeouts, 4, "the first try and 3 retries");
        assert_eq!(h.qp.poll_timeout(), None);
    }
}

/// [RC-052]: with loss, the responder sends one NAK per gap and drops the
/// rest of the gap silently; the requester acts on at most that many.
#[test]
fn one_nak_per_gap_under_loss() {
    let r = run(4242, 100, 0.05, Transport::Gbn);
    assert!(r.gap_naks > 0 && r.silent_drops > 0, "{r:?}");
    assert!(r.seq_naks <= r.gap_naks, "{r:?}");
}
