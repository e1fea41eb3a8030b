//! Tests of the stdio framing and the lockstep DUT driver.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::io::Cursor;
use std::net::Ipv4Addr;

use epic_proto::engine::EngineDropReason;
use epic_proto::psn::Psn;
use epic_proto::testing::FrameBuilder;
use epic_proto::time::Instant;
use epic_proto::wire::{EthernetAddress, Opcode, Qpn};
use proptest::prelude::*;

use super::*;
use crate::{SwitchConfig, SwitchCounters, SwitchSpec};

const SW_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0x01, 0, 0]);
const SW_IP: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 0);
const RANK1_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x01]);
const RANK1_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

fn t(ns: u64) -> Instant {
    Instant::from_nanos(ns)
}

/// The documented example: Tree-2-2, two ports, one Mode II context.
fn example() -> SwitchSpec {
    SwitchConfig::parse(include_str!("../../examples/switch.toml"))
        .unwrap()
        .spec
}

fn to_dut_bytes(ms: &[ToDut]) -> Vec<u8> {
    let mut b = Vec::new();
    for m in ms {
        write_to_dut(&mut b, m).unwrap();
    }
    b
}

/// Every DUT → harness message in `out`.
fn from_dut_all(out: &[u8]) -> Vec<FromDut> {
    let mut r = Cursor::new(out);
    let mut all = Vec::new();
    while let Some(m) = read_from_dut(&mut r).unwrap() {
        all.push(m);
    }
    all
}

/// Serves `ms` on the example switch; the result and the replies.
fn serve(spec: SwitchSpec, ms: &[ToDut]) -> (Result<SwitchCounters, StdioError>, Vec<FromDut>) {
    let mut out = Vec::new();
    let r = serve_stdio(spec, 2, Cursor::new(to_dut_bytes(ms)), &mut out);
    (r, from_dut_all(&out))
}

/// A broadcast ARP request from rank 1 for `target`, padded to 60.
fn arp_request(target: Ipv4Addr) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&RANK1_MAC.0);
    f.extend_from_slice(&[0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01]);
    f.extend_from_slice(&RANK1_MAC.0);
    f.extend_from_slice(&RANK1_IP.octets());
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&target.octets());
    f.resize(60, 0);
    f
}

/// A valid RoCEv2 SEND_ONLY from rank 1 to the switch, QP `qp`.
fn roce_to_switch(qp: u32) -> Vec<u8> {
    FrameBuilder::new(Opcode::RcSendOnly)
        .dst_mac(SW_MAC)
        .src_mac(RANK1_MAC)
        .src_ip(RANK1_IP)
        .dst_ip(SW_IP)
        .ident(7)
        .dest_qp(Qpn::try_new(qp).unwrap())
        .psn(Psn::try_new(100).unwrap())
        .payload(&[0x5au8; 64])
        .build()
}

// ---- codec ----------------------------------------------------------------

/// [CONF-030] [CONF-031] [CONF-032] Every kind round-trips, back to back
/// in one stream, and the stream ends cleanly.
#[test]
fn every_kind_round_trips() {
    let to = [
        ToDut::Frame {
            time: t(5),
            port: 3,
            frame: vec![1, 2, 3],
        },
        ToDut::Frame {
            time: Instant::MAX,
            port: u16::MAX,
            frame: Vec::new(),
        },
        ToDut::Time(t(1_000_000)),
        ToDut::End,
    ];
    let mut r = Cursor::new(to_dut_bytes(&to));
    for m in &to {
        assert_eq!(read_to_dut(&mut r).unwrap().as_ref(), Some(m));
    }
    assert!(read_to_dut(&mut r).unwrap().is_none());

    let from = [
        FromDut::Ready("epic".into()),
        FromDut::Ready(String::new()),
        FromDut::Refused("arena: zu klein ✗".into()),
        FromDut::Frame {
            port: 1,
            frame: vec![0xff; 60],
        },
        FromDut::Idle(Some(t(42))),
        FromDut::Idle(None),
    ];
    let mut b = Vec::new();
    for m in &from {
        write_from_dut(&mut b, m).unwrap();
    }
    assert_eq!(from_dut_all(&b), from);
}

/// [CONF-030] The bytes on the wire: length, kind, big-endian body.
#[test]
fn wire_bytes_are_as_specified() {
    let b = to_dut_bytes(&[ToDut::Frame {
        time: t(0x0102),
        port: 0x0304,
        frame: vec![0xaa],
    }]);
    assert_eq!(
        b,
        [0, 0, 0, 12, 0x01, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 0xaa].to_vec()
    );
    assert_eq!(to_dut_bytes(&[ToDut::End]), [0, 0, 0, 1, 0x03].to_vec());
    let mut b = Vec::new();
    write_from_dut(&mut b, &FromDut::Idle(None)).unwrap();
    assert_eq!(
        b,
        [0, 0, 0, 9, 0x84, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff].to_vec()
    );
}

/// [CONF-030] The writers refuse a message above MAX_MESSAGE and accept
/// one of exactly MAX_MESSAGE.
#[test]
fn writers_refuse_oversized_messages() {
    let fits = usize::try_from(MAX_MESSAGE).unwrap() - 1 - 8 - 2;
    let mut b = Vec::new();
    let m = ToDut::Frame {
        time: t(0),
        port: 0,
        frame: vec![0; fits],
    };
    write_to_dut(&mut b, &m).unwrap();
    assert_eq!(read_to_dut(&mut Cursor::new(&b)).unwrap(), Some(m));
    let mut b = Vec::new();
    let e = write_to_dut(
        &mut b,
        &ToDut::Frame {
            time: t(0),
            port: 0,
            frame: vec![0; fits + 1],
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    let e = write_from_dut(&mut b, &FromDut::Ready("x".repeat(fits + 11))).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}

fn to_dut_err(bytes: &[u8]) -> FramingError {
    read_to_dut(&mut Cursor::new(bytes)).unwrap_err()
}

fn from_dut_err(bytes: &[u8]) -> FramingError {
    read_from_dut(&mut Cursor::new(bytes)).unwrap_err()
}

/// [CONF-030] [CONF-031] [CONF-032] Each malformed input gives its typed
/// error.
#[test]
fn malformed_messages_are_typed_errors() {
    use FramingError as E;
    assert!(matches!(to_dut_err(&[0, 0, 0, 0]), E::Length(0)));
    assert!(matches!(to_dut_err(&[0, 1, 0, 1, 0x02]), E::Length(65_537)));
    assert!(matches!(
        to_dut_err(&[0, 0]),
        E::Eof {
            read: 2,
            expected: 4
        }
    ));
    assert!(matches!(
        to_dut_err(&[0, 0, 0, 9, 0x02, 0, 0]),
        E::Eof {
            read: 7,
            expected: 13
        }
    ));
    assert!(matches!(
        to_dut_err(&[0, 0, 0, 1]),
        E::Eof {
            read: 4,
            expected: 5
        }
    ));
    // A DUT → harness kind is unknown to the DUT, and the other way round.
    assert!(matches!(
        to_dut_err(&[0, 0, 0, 1, 0x84]),
        E::UnknownKind(0x84)
    ));
    assert!(matches!(
        from_dut_err(&[0, 0, 0, 1, 0x03]),
        E::UnknownKind(0x03)
    ));
    assert!(matches!(to_dut_err(&[0, 0, 0, 1, 0x00]), E::UnknownKind(0)));
    // Short bodies.
    assert!(matches!(
        to_dut_err(&[0, 0, 0, 5, 0x02, 0, 0, 0, 1]),
        E::ShortBody {
            kind: 0x02,
            len: 4,
            min: 8
        }
    ));
    assert!(matches!(
        to_dut_err(&[0, 0, 0, 10, 0x01, 0, 0, 0, 0, 0, 0, 0, 1, 0]),
        E::ShortBody {
            kind: 0x01,
            len: 9,
            min: 10
        }
    ));
    assert!(matches!(
        from_dut_err(&[0, 0, 0, 2, 0x83, 0]),
        E::ShortBody {
            kind: 0x83,
            len: 1,
            min: 2
        }
    ));
    assert!(matches!(
        from_dut_err(&[0, 0, 0, 1, 0x84]),
        E::ShortBody {
            kind: 0x84,
            len: 0,
            min: 8
        }
    ));
    // Trailing bytes after a fixed-size body.
    assert!(matches!(
        to_dut_err(&[0, 0, 0, 2, 0x03, 0]),
        E::LongBody {
            kind: 0x03,
            len: 1,
            max: 0
        }
    ));
    assert!(matches!(
        to_dut_err(&[0, 0, 0, 10, 0x02, 0, 0, 0, 0, 0, 0, 0, 1, 9]),
        E::LongBody {
            kind: 0x02,
            len: 9,
            max: 8
        }
    ));
    // Text that is not UTF-8.
    assert!(matches!(
        from_dut_err(&[0, 0, 0, 3, 0x82, 0xc3, 0x28]),
        E::Utf8 { kind: 0x82, .. }
    ));
    // An I/O error is passed on.
    struct Broken;
    impl std::io::Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("gone"))
        }
    }
    assert!(matches!(read_to_dut(&mut Broken), Err(E::Io(_))));
    // Every error has a message.
    assert!(to_dut_err(&[0, 0, 0, 0]).to_string().contains("1..=65536"));
}

/// [CONF-030] A reader that returns one byte at a time (a pipe) still
/// reads whole messages.
#[test]
fn readers_handle_short_reads() {
    struct Trickle<'a>(&'a [u8]);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((b, rest)), Some(slot)) => {
                    *slot = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }
    let ms = [ToDut::Time(t(9)), ToDut::End];
    let bytes = to_dut_bytes(&ms);
    let mut r = Trickle(&bytes);
    assert_eq!(read_to_dut(&mut r).unwrap(), Some(ToDut::Time(t(9))));
    assert_eq!(read_to_dut(&mut r).unwrap(), Some(ToDut::End));
    assert_eq!(read_to_dut(&mut r).unwrap(), None);
}

proptest! {
    /// [CONF-030] Arbitrary bytes fed to both readers never panic: every
    /// read is a message, the clean end, or a typed error.
    #[test]
    fn readers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut r = Cursor::new(&bytes);
        while let Ok(Some(_)) = read_to_dut(&mut r) {}
        let mut r = Cursor::new(&bytes);
        while let Ok(Some(_)) = read_from_dut(&mut r) {}
    }

    /// [CONF-030] The same with plausible headers: a small length and a
    /// real kind in front of arbitrary bodies.
    #[test]
    fn readers_never_panic_on_plausible_headers(
        msgs in proptest::collection::vec(
            (0u32..24, prop::sample::select(vec![0x01u8, 0x02, 0x03, 0x81, 0x82, 0x83, 0x84]),
             proptest::collection::vec(any::<u8>(), 0..24)),
            0..8,
        )
    ) {
        let mut bytes = Vec::new();
        for (len, kind, body) in &msgs {
            bytes.extend_from_slice(&len.to_be_bytes());
            bytes.push(*kind);
            bytes.extend_from_slice(body);
        }
        let mut r = Cursor::new(&bytes);
        while let Ok(Some(_)) = read_to_dut(&mut r) {}
        let mut r = Cursor::new(&bytes);
        while let Ok(Some(_)) = read_from_dut(&mut r) {}
    }

    /// [CONF-031] [CONF-033] Arbitrary frame contents never stop the DUT:
    /// each message gets its reply ending in one IDLE.
    #[test]
    fn dut_survives_arbitrary_frames(
        frames in proptest::collection::vec(
            (0u16..2, proptest::collection::vec(any::<u8>(), 0..128)),
            0..16,
        )
    ) {
        let ms: Vec<ToDut> = frames
            .iter()
            .enumerate()
            .map(|(i, (port, frame))| ToDut::Frame {
                time: t(i as u64),
                port: *port,
                frame: frame.clone(),
            })
            .collect();
        let (r, out) = serve(example(), &ms);
        prop_assert!(r.is_ok());
        let idles = out.iter().filter(|m| matches!(m, FromDut::Idle(_))).count();
        prop_assert_eq!(idles, ms.len());
    }
}

// ---- serve_stdio ------------------------------------------------------------

/// [CONF-032] READY is the first message; END stops the DUT cleanly, and
/// so does end of input.
#[test]
fn ready_first_then_end() {
    let (r, out) = serve(example(), &[ToDut::End, ToDut::Time(t(1))]);
    r.unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    let FromDut::Ready(text) = &out[0] else {
        panic!("{out:?}");
    };
    assert!(
        text.contains("tree-2-2") && text.contains("2 ports"),
        "{text}"
    );
    let (r, out) = serve(example(), &[]);
    r.unwrap();
    assert!(matches!(out.as_slice(), [FromDut::Ready(_)]));
}

/// [CONF-032] [CONF-033] [SW-011] An ARP request for the switch's IP is
/// answered on the port it came in on, then IDLE ends the reply.
#[test]
fn arp_request_answered_then_idle() {
    let (r, out) = serve(
        example(),
        &[
            ToDut::Frame {
                time: t(1_000),
                port: 1,
                frame: arp_request(SW_IP),
            },
            ToDut::End,
        ],
    );
    let counters = r.unwrap();
    assert_eq!(out.len(), 3, "{out:?}");
    assert!(matches!(out[0], FromDut::Ready(_)));
    let FromDut::Frame { port, frame } = &out[1] else {
        panic!("{out:?}");
    };
    assert_eq!(*port, 1);
    assert_eq!(&frame[..6], &RANK1_MAC.0);
    assert_eq!(&frame[6..12], &SW_MAC.0);
    assert_eq!(&frame[12..14], &[0x08, 0x06]);
    assert_eq!(&frame[20..22], &[0, 2], "an ARP reply");
    assert_eq!(&frame[28..32], &SW_IP.octets());
    assert_eq!(out[2], FromDut::Idle(None));
    assert_eq!(counters.router.arp_replies, 1);
    assert_eq!(counters.ports[1].io.rx_frames, 1);
    assert_eq!(counters.ports[1].io.tx_frames, 1);
}

/// [CONF-032] [CONF-033] A RoCE frame to a QP no context has is dropped
/// (`unknown_qp`): the reply is just IDLE. So is a TIME with no timer.
#[test]
fn unknown_qp_gets_just_idle() {
    let (r, out) = serve(
        example(),
        &[
            ToDut::Frame {
                time: t(10),
                port: 0,
                frame: roce_to_switch(0x777),
            },
            ToDut::Time(t(20)),
        ],
    );
    let counters = r.unwrap();
    assert_eq!(out.len(), 3, "{out:?}");
    assert_eq!(out[1..], [FromDut::Idle(None), FromDut::Idle(None)]);
    assert_eq!(counters.engine.drops(EngineDropReason::UnknownQp), 1);
}

/// [CONF-032] A context that does not fit the arena: REFUSED with the
/// install error's text instead of READY, and an error.
#[test]
fn refused_when_the_arena_is_too_small() {
    let mut spec = example();
    spec.engine.arena_bytes = 64;
    let (r, out) = serve(spec, &[ToDut::Time(t(1))]);
    let Err(StdioError::Refused(e)) = r else {
        panic!("{r:?}");
    };
    assert_eq!(out, [FromDut::Refused(e.to_string())]);
    assert!(e.to_string().contains("arena"), "{e}");
}

/// [CONF-033] Time going backwards is a typed error; equal times are
/// fine.
#[test]
fn time_going_backwards_is_an_error() {
    let (r, out) = serve(
        example(),
        &[ToDut::Time(t(100)), ToDut::Time(t(100)), ToDut::Time(t(99))],
    );
    assert!(
        matches!(
            r,
            Err(StdioError::Framing(FramingError::TimeBackwards { previous, time }))
                if previous == t(100) && time == t(99)
        ),
        "{r:?}"
    );
    assert_eq!(out.len(), 3, "READY and two IDLEs: {out:?}");
}

/// [CONF-031] [CONF-034] A FRAME on a port the configuration lacks is an
/// error; a malformed message ends the session with its framing error.
#[test]
fn bad_port_and_malformed_input_are_errors() {
    let (r, _) = serve(
        example(),
        &[ToDut::Frame {
            time: t(0),
            port: 2,
            frame: vec![0; 60],
        }],
    );
    assert!(
        matches!(r, Err(StdioError::NoSuchPort { port: 2, ports: 2 })),
        "{r:?}"
    );
    let mut out = Vec::new();
    let r = serve_stdio(example(), 2, Cursor::new([0, 0, 0, 1, 0x7f]), &mut out);
    assert!(
        matches!(r, Err(StdioError::Framing(FramingError::UnknownKind(0x7f)))),
        "{r:?}"
    );
    let r = serve_stdio(example(), 2, Cursor::new([0, 0, 0, 9, 0x02]), &mut out);
    assert!(
        matches!(r, Err(StdioError::Framing(FramingError::Eof { .. }))),
        "{r:?}"
    );
}

/// [CONF-031] A frame larger than the switch's largest is dropped and
/// counted, not handled; the reply is IDLE.
#[test]
fn oversized_frame_is_counted_and_dropped() {
    let (r, out) = serve(
        example(),
        &[ToDut::Frame {
            time: t(0),
            port: 0,
            frame: vec![0xff; epic_io::MAX_FRAME + 1],
        }],
    );
    let c = r.unwrap();
    assert_eq!(out[1..], [FromDut::Idle(None)]);
    assert_eq!(c.ports[0].io.rx_oversize, 1);
    assert_eq!(c.ports[0].io.rx_frames, 0);
}
