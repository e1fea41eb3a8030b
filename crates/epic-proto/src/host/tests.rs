//! Unit tests of the host driver against a fake first-hop switch: a plain
//! RC QP that echoes every control message (setting `denied` on acquire
//! Barriers when told to) and returns every data message as its result.
//! Each test names the SPEC IDs it checks.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::string::ToString;
use std::vec;
use std::vec::Vec;

use super::*;
use crate::roce::{Completion, Mtu, PathConfig, QpConfig, RcQp, SendOp, WcStatus, WrId};
use crate::time::Instant;
use crate::wire::{
    Collective, DataType, EpicHeaderPacket, EpicHeaderRepr, EthernetAddress, GroupId, Opcode, Qpn,
    ReduceOp, RoceFrame, EPIC_HEADER_LEN, EPIC_IMM_TAG,
};
use core::net::Ipv4Addr;

type Qp = RcQp<Vec<u8>, Vec<u8>>;

/// INT32 elements of the AllReduce the tests run: three 1024-byte
/// packets, one message each.
const ELEMENTS: u64 = 600;

fn qp_configs() -> (QpConfig, QpConfig) {
    let (mh, ms) = (
        EthernetAddress([2, 0, 0, 0, 0, 1]),
        EthernetAddress([2, 0, 0, 1, 0, 0]),
    );
    let (ih, is) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 1, 0, 0));
    let q = |v| Qpn::try_new(v).unwrap();
    let mut host = QpConfig::new(q(0x11), q(0x1001), PathConfig::new(mh, ms, ih, is));
    let mut switch = QpConfig::new(q(0x1001), q(0x11), PathConfig::new(ms, mh, is, ih));
    for c in [&mut host, &mut switch] {
        c.mtu = Mtu::Mtu1024;
    }
    (host, switch)
}

fn host_config() -> HostConfig {
    HostConfig {
        rank: 0,
        ranks: 2,
        group: GroupId(7),
        qp: qp_configs().0,
        message_packets: 1,
        window: 4,
    }
}

/// What the fake switch does with an acquire Barrier's echo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Grant,
    Deny,
    /// An echo of 8 bytes: no EPIC header.
    Truncate,
    /// Every data message refused with NAK invalid request, as a Mode I
    /// switch refuses what it would discard ([M1-041], [RC-067]).
    RefuseData,
}

/// The fake first-hop switch.
struct FakeSwitch {
    qp: Qp,
    answer: Answer,
    /// Every control message received, in order.
    controls: Vec<EpicHeaderRepr>,
    /// Data messages received.
    data: usize,
}

impl FakeSwitch {
    fn new() -> FakeSwitch {
        let mut qp = Qp::new(qp_configs().1).unwrap();
        for i in 0..32 {
            qp.post_recv(WrId(i), vec![0u8; 2048]).unwrap();
        }
        FakeSwitch {
            qp,
            answer: Answer::Grant,
            controls: Vec::new(),
            data: 0,
        }
    }

    /// Takes a frame from the host, refusing data when told to.
    fn take(&mut self, now: Instant, frame: &[u8]) {
        if self.answer != Answer::RefuseData {
            return self.qp.handle_frame(now, frame);
        }
        let f = RoceFrame::parse_verified_transport(frame).unwrap();
        let mut refuse_data = |h: &crate::roce::RequestHead<'_>| match h.imm {
            None => crate::roce::Admission::Refuse,
            Some(_) => crate::roce::Admission::Take,
        };
        self.qp.handle_verified_admitting(now, &f, &mut refuse_data);
    }

    /// Answers every message that arrived.
    fn serve(&mut self) {
        while let Some(c) = self.qp.poll_completion() {
            let Completion::Recv {
                wr_id,
                status,
                byte_len,
                imm,
                buf,
                ..
            } = c
            else {
                continue;
            };
            assert_eq!(status, WcStatus::Success);
            let msg = buf[..byte_len as usize].to_vec();
            if imm == Some(EPIC_IMM_TAG) {
                let mut h =
                    EpicHeaderRepr::parse(&EpicHeaderPacket::new_checked(&msg[..]).unwrap())
                        .unwrap();
                self.controls.push(h);
                let mut echo = vec![0u8; EPIC_HEADER_LEN];
                if h.flags.acquire {
                    h.flags.denied = self.answer == Answer::Deny;
                    if self.answer == Answer::Truncate {
                        echo.truncate(8);
                    }
                }
                if echo.len() == EPIC_HEADER_LEN {
                    h.emit(&mut echo).unwrap();
                }
                self.qp
                    .post_send(WrId(0), SendOp::SendWithImm { imm: EPIC_IMM_TAG }, echo)
                    .unwrap();
            } else {
                self.data += 1;
                self.qp.post_send(WrId(1), SendOp::Send, msg).unwrap();
            }
            self.qp.post_recv(wr_id, buf).unwrap();
        }
    }
}

/// How the host is handed what it receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Feed {
    /// [`HostRank::handle_frame`]: the bytes.
    Frame,
    /// Parsed and verified once by the driver:
    /// [`HostRank::handle_verified`], or [`HostRank::handle_refused`].
    Once,
    /// As `Once`, the ICRC computed beforehand (as the UDP backend does).
    OnceWithIcrc,
}

fn feed(host: &mut HostRank, how: Feed, now: Instant, frame: &[u8]) {
    let parsed = match how {
        Feed::Frame => return host.handle_frame(now, frame),
        Feed::Once => RoceFrame::parse_verified_transport(frame),
        Feed::OnceWithIcrc => {
            let l = crate::wire::FrameLayout::locate(frame).unwrap();
            let icrc = crate::wire::icrc::compute(&frame[l.ipv4..l.icrc]).unwrap();
            RoceFrame::parse_verified_transport_with_icrc(frame, icrc)
        }
    };
    match parsed {
        Ok(f) => host.handle_verified(now, &f),
        Err(e) => host.handle_refused(now, frame, &e),
    }
}

/// Moves frames both ways until the host reports; returns the event and
/// every frame the host sent.
fn run(host: &mut HostRank, sw: &mut FakeSwitch) -> (HostEvent, Vec<Vec<u8>>) {
    run_fed(host, sw, Feed::Frame, false)
}

/// [`run`], feeding the host `how`; with `corrupt`, every fourth frame
/// toward the host first arrives with a flipped payload bit (and is
/// dropped), then intact.
fn run_fed(
    host: &mut HostRank,
    sw: &mut FakeSwitch,
    how: Feed,
    corrupt: bool,
) -> (HostEvent, Vec<Vec<u8>>) {
    let now = Instant::ZERO;
    let mut received = 0;
    let mut buf = vec![0u8; 4096];
    let mut sent = Vec::new();
    for _ in 0..1000 {
        if let Some(ev) = host.poll_event() {
            return (ev, sent);
        }
        while let Some(n) = host.poll_transmit(now, &mut buf) {
            sent.push(buf[..n].to_vec());
            sw.take(now, &buf[..n]);
        }
        sw.serve();
        while let Ok(Some(n)) = sw.qp.poll_transmit(now, &mut buf) {
            received += 1;
            if corrupt && received % 4 == 0 {
                let mut bad = buf[..n].to_vec();
                bad[n - 8] ^= 1;
                feed(host, how, now, &bad);
            }
            feed(host, how, now, &buf[..n]);
        }
    }
    panic!("the call did not finish: {:?}", host.progress());
}

/// Data packets (RC SENDs without an EPIC header) among `frames`.
fn data_packets(frames: &[Vec<u8>]) -> usize {
    frames
        .iter()
        .filter(|f| {
            let f = RoceFrame::parse(f).unwrap();
            f.epic.is_none()
                && matches!(
                    f.bth.opcode,
                    Opcode::RcSendOnly
                        | Opcode::RcSendFirst
                        | Opcode::RcSendMiddle
                        | Opcode::RcSendLast
                )
        })
        .count()
}

fn all_reduce() -> (CollectiveRequest, Vec<u8>) {
    let req = CollectiveRequest::new(Collective::AllReduce)
        .with_op(ReduceOp::Sum)
        .with_dtype(DataType::Int32);
    let input = (0..ELEMENTS as u32).flat_map(u32::to_be_bytes).collect();
    (req, input)
}

fn start(host: &mut HostRank, req: CollectiveRequest, input: &[u8]) {
    let elements = if req.collective == Collective::Barrier {
        0
    } else {
        ELEMENTS
    };
    let cfg = *host.config();
    let req = req.check(cfg.rank, cfg.ranks, elements).unwrap();
    host.start(Instant::ZERO, req, input).unwrap();
}

/// The lock flags a control message carries: (acquire, release).
fn lock_flags(h: &EpicHeaderRepr) -> (bool, bool) {
    (h.flags.acquire, h.flags.release)
}

/// [TMX-020] Without contention a call sends its own control message
/// only, with no lock flag.
#[test]
fn uncontended_call_sends_no_lock_barriers() {
    let mut host = HostRank::new(host_config()).unwrap();
    let mut sw = FakeSwitch::new();
    let (req, input) = all_reduce();
    start(&mut host, req, &input);
    let (ev, sent) = run(&mut host, &mut sw);
    assert_eq!(ev, HostEvent::Completed { output: input });
    assert_eq!(sw.controls.len(), 1);
    assert_eq!(sw.controls[0].collective, Collective::AllReduce);
    assert_eq!(lock_flags(&sw.controls[0]), (false, false));
    assert_eq!(data_packets(&sent), 3);
}

/// A contended rank, resyncing its QP after each invocation or not
/// (Mode I).
fn contended(resync: bool) -> HostRank {
    let mut host = if resync {
        HostRank::new(host_config()).unwrap()
    } else {
        HostRank::without_resync(host_config()).unwrap()
    };
    host.set_contended(true);
    host
}

/// [TMX-010] [TMX-013] [TMX-020] A granted contended call runs an acquire
/// Barrier, its own invocations and a release Barrier, each with its own
/// invocation number and PSN; the lock Barriers of a reducing call carry
/// no op and no type.
#[test]
fn granted_call_is_bracketed_by_lock_barriers() {
    for resync in [true, false] {
        let mut host = contended(resync);
        let mut sw = FakeSwitch::new();
        let (req, input) = all_reduce();
        start(&mut host, req, &input);
        let (ev, sent) = run(&mut host, &mut sw);
        assert_eq!(ev, HostEvent::Completed { output: input });
        assert_eq!(data_packets(&sent), 3);
        let c = &sw.controls;
        let kinds: Vec<_> = c.iter().map(|h| (h.collective, lock_flags(h))).collect();
        assert_eq!(
            kinds,
            [
                (Collective::Barrier, (true, false)),
                (Collective::AllReduce, (false, false)),
                (Collective::Barrier, (false, true)),
            ]
        );
        for h in [&c[0], &c[2]] {
            assert_eq!(h.reduce_op, ReduceOp::None);
            assert_eq!(h.data_type, DataType::None);
            assert!(!h.flags.denied && !h.flags.reproducible);
            assert!(h.validate().is_ok());
        }
        assert_eq!(
            [c[0].invocation, c[1].invocation, c[2].invocation],
            [0, 1, 2]
        );
        // Each Barrier takes one PSN, the AllReduce its control and data.
        assert_eq!(c[1].first_psn, c[0].first_psn.add(1));
        assert_eq!(c[2].first_psn, c[1].first_psn.add(4));
        assert!(!host.busy());
    }
}

/// [TMX-011] [TMX-020] A denied acquire ends the call with `Denied`
/// before any of its data is sent; the denied Barrier consumed its PSN,
/// and the next call runs on the aligned QP.
#[test]
fn denied_call_sends_no_data_and_the_next_call_runs() {
    for resync in [true, false] {
        let mut host = contended(resync);
        let mut sw = FakeSwitch::new();
        sw.answer = Answer::Deny;
        let (req, input) = all_reduce();
        start(&mut host, req, &input);
        let (ev, sent) = run(&mut host, &mut sw);
        assert_eq!(ev, HostEvent::Denied);
        assert_eq!(data_packets(&sent), 0);
        assert_eq!(sw.data, 0);
        assert_eq!(sw.controls.len(), 1);
        assert_eq!(lock_flags(&sw.controls[0]), (true, false));
        assert!(!host.busy());
        assert!(host.progress().is_none());
        let acquire_psn = sw.controls[0].first_psn.sub(1);
        assert_eq!(host.qp().send_psn(), acquire_psn.add(1));
        assert_eq!(host.qp().expected_psn(), acquire_psn.add(1));

        // The blocks are free again: the same call runs.
        sw.answer = Answer::Grant;
        start(&mut host, req, &input);
        let (ev, sent) = run(&mut host, &mut sw);
        assert_eq!(ev, HostEvent::Completed { output: input });
        assert_eq!(data_packets(&sent), 3);
        assert_eq!(sw.controls.len(), 4);
        assert_eq!(sw.controls[1].first_psn, sw.controls[0].first_psn.add(1));
        assert_eq!(sw.controls[1].invocation, 1);
        assert_eq!(host.qp().counters().timeouts, 0);

        // A Barrier call, denied: no Barrier of its own is sent either.
        sw.answer = Answer::Deny;
        start(&mut host, CollectiveRequest::new(Collective::Barrier), &[]);
        assert_eq!(run(&mut host, &mut sw).0, HostEvent::Denied);
        assert_eq!(sw.controls.len(), 5);
        assert_eq!(lock_flags(&sw.controls[4]), (true, false));
    }
}

/// [TMX-011] An acquire echo without a valid EPIC header fails the call
/// like an echo without the EPIC ImmDt.
#[test]
fn acquire_echo_without_header_fails() {
    let mut host = HostRank::new(host_config()).unwrap();
    host.set_contended(true);
    let mut sw = FakeSwitch::new();
    sw.answer = Answer::Truncate;
    let (req, input) = all_reduce();
    start(&mut host, req, &input);
    let (ev, sent) = run(&mut host, &mut sw);
    assert_eq!(
        ev,
        HostEvent::Failed(HostError::Transport(WcStatus::LocalLengthError))
    );
    assert_eq!(data_packets(&sent), 0);
}

/// [RC-034] [RC-067] [M1-041] A first hop that refuses the rank's data
/// with NAK invalid request (as a Mode I switch refuses what it would
/// discard) fails the call with a typed transport error at once: the
/// rank's QP completes the work request in error, and the call does not
/// wait for anything.
#[test]
fn refused_data_fails_the_call() {
    let mut host = HostRank::new(host_config()).unwrap();
    let mut sw = FakeSwitch::new();
    sw.answer = Answer::RefuseData;
    let (req, input) = all_reduce();
    start(&mut host, req, &input);
    let (ev, sent) = run(&mut host, &mut sw);
    assert_eq!(
        ev,
        HostEvent::Failed(HostError::Transport(WcStatus::RemoteInvalidRequest))
    );
    // The first message is refused; those sent behind it are ahead of
    // the PSN the switch still expects, and dropped silently. [RC-052]
    let c = sw.qp.counters();
    assert_eq!(sw.data, 0, "nothing refused was delivered");
    assert_eq!(c.drops(crate::roce::DropReason::Refused), 1);
    assert_eq!(c.tx_naks, 1);
    assert_eq!(
        c.drops(crate::roce::DropReason::OutOfSequenceSilent),
        data_packets(&sent) as u64 - 1
    );
    assert_eq!(host.qp().state(), crate::roce::QpState::Error);
    assert!(!host.busy());
}

/// [TMX-020] [CTL-050] With per-pattern lanes the lock Barriers run on
/// the AllReduce lane, like every Barrier.
#[test]
fn per_pattern_lock_barriers_use_the_all_reduce_lane() {
    use crate::engine::PatternBinding;
    let (qp, _) = qp_configs();
    let lanes: Vec<PatternLane> = PatternBinding::all(2)
        .enumerate()
        .map(|(i, b)| {
            let mut q = qp;
            q.local_qpn = Qpn::try_new(0x11 + i as u32).unwrap();
            q.remote_qpn = Qpn::try_new(0x1001 + i as u32).unwrap();
            PatternLane {
                binding: b,
                group: GroupId(7 + i as u32),
                qp: q,
            }
        })
        .collect();
    let mut host = HostRank::per_pattern(host_config(), &lanes).unwrap();
    host.set_contended(true);
    // Broadcast from rank 1: its control goes on rank 1's Broadcast lane,
    // both lock Barriers on the AllReduce lane.
    let req = CollectiveRequest::new(Collective::Broadcast)
        .with_dtype(DataType::Int32)
        .with_root(1);
    let cfg = *host.config();
    let req = req.check(cfg.rank, cfg.ranks, ELEMENTS).unwrap();
    host.start(Instant::ZERO, req, &[]).unwrap();
    let mut buf = vec![0u8; 4096];
    let f = host.poll_transmit(Instant::ZERO, &mut buf).unwrap();
    let f = RoceFrame::parse(&buf[..f]).unwrap();
    let h = f.epic.unwrap();
    assert_eq!(lock_flags(&h), (true, false));
    assert_eq!(h.group_id, GroupId(7));
    let all_reduce_lane = PatternBinding::of(Collective::AllReduce, 0).unwrap();
    let lane = lanes.iter().find(|l| l.binding == all_reduce_lane).unwrap();
    assert_eq!(f.bth.dest_qp, lane.qp.remote_qpn);
}

/// [HOST-020] [RC-006] A frame parsed and verified once by the driver
/// (with the ICRC computed there or handed on) does to the rank exactly
/// what the bytes do: the same frames sent, the same result, the same
/// counters, a corrupted frame dropped under the same typed reason.
#[test]
fn a_frame_verified_once_acts_as_its_bytes() {
    let mut outcomes = Vec::new();
    for how in [Feed::Frame, Feed::Once, Feed::OnceWithIcrc] {
        let mut host = HostRank::new(host_config()).unwrap();
        let mut sw = FakeSwitch::new();
        let (req, input) = all_reduce();
        start(&mut host, req, &input);
        let (ev, sent) = run_fed(&mut host, &mut sw, how, true);
        assert_eq!(ev, HostEvent::Completed { output: input });
        let counters = host.qp().counters().clone();
        assert!(counters.drops(crate::roce::DropReason::BadChecksum) > 0);
        outcomes.push((sent, counters));
    }
    assert_eq!(outcomes[0], outcomes[1]);
    assert_eq!(outcomes[0], outcomes[2]);
}

/// [HOST-010] [HOST-003] A request is checked once, for one rank of one
/// group, and refused with what is wrong as data; the rank takes only a
/// checked request, for its own seat, with an input of the right length.
#[test]
fn requests_are_checked_once_with_typed_refusals() {
    let ar = CollectiveRequest::new(Collective::AllReduce)
        .with_op(ReduceOp::Sum)
        .with_dtype(DataType::Int32);
    let ok = ar.check(0, 2, ELEMENTS).unwrap();
    assert_eq!(ok.input_bytes(), 2400);
    assert_eq!(ok.output_bytes(), 2400);
    let refused = [
        (
            CollectiveRequest::new(Collective::Unknown(9)),
            RequestError::UnknownCollective(Collective::Unknown(9)),
        ),
        (ar.with_dtype(DataType::None), RequestError::NoDataType),
        (
            ar.with_op(ReduceOp::None),
            RequestError::UnsupportedOp(ReduceOp::None),
        ),
        (
            CollectiveRequest::new(Collective::Broadcast)
                .with_dtype(DataType::Int32)
                .with_op(ReduceOp::Max),
            RequestError::OpWithoutReduction {
                collective: Collective::Broadcast,
                op: ReduceOp::Max,
            },
        ),
        (
            CollectiveRequest::new(Collective::Broadcast)
                .with_dtype(DataType::Int32)
                .with_root(2),
            RequestError::RootOutOfRange { root: 2, ranks: 2 },
        ),
        (
            CollectiveRequest::new(Collective::ReduceScatter)
                .with_dtype(DataType::Int32)
                .with_op(ReduceOp::Sum),
            RequestError::NotDivisible {
                elements: 601,
                ranks: 2,
            },
        ),
        (
            CollectiveRequest::new(Collective::Barrier),
            RequestError::BarrierWithData { elements: 601 },
        ),
    ];
    for (req, want) in refused {
        let got = req.check(0, 2, 601).unwrap_err();
        assert_eq!(got, want);
        assert!(!got.to_string().is_empty());
    }
    assert_eq!(
        ar.check(2, 2, 1).unwrap_err(),
        RequestError::RankOutOfRange { rank: 2, ranks: 2 }
    );
    let mut host = HostRank::new(host_config()).unwrap();
    let other = ar.check(1, 2, ELEMENTS).unwrap();
    assert_eq!(
        host.start(Instant::ZERO, other, &[]).unwrap_err(),
        HostError::OtherGroup { rank: 1, ranks: 2 }
    );
    let e = host.start(Instant::ZERO, ok, &[0; 4]).unwrap_err();
    assert_eq!(
        e,
        HostError::InputLength {
            expected: 2400,
            got: 4
        }
    );
    assert!(e.is_misuse());
    assert!(e.to_string().contains("2400"));
    assert!(!host.busy());
}
