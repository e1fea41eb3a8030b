//! Golden frames: `fixtures/wire/golden.pcap` and what `epic decode` prints
//! for it (`golden.jsonl`, `golden.txt`), plus the capture-level error
//! paths of `epic decode`.
//!
//! Regenerate on purpose only: `EPIC_BLESS=1 cargo test -p epic-cli --test golden`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::vec_init_then_push
)]

use std::borrow::Cow;
use std::fs;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use epic_proto::testing::FrameBuilder;
use epic_proto::wire::*;
use epic_proto::Psn;
use pcap_file::pcap::{PcapPacket, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures() -> PathBuf {
    root().join("fixtures/wire")
}

fn epic() -> Command {
    Command::new(env!("CARGO_BIN_EXE_epic"))
}

fn mac(last: u8) -> EthernetAddress {
    EthernetAddress([0x02, 0, 0, 0, 0, last])
}

/// The golden frames' headers: DSCP 26, ECT(0), ident 0x1234, UDP source
/// port 0xC001, no AckReq, the given opcode and PSN.
fn base(opcode: Opcode, psn: u32) -> FrameBuilder {
    FrameBuilder::new(opcode)
        .tos(Dscp::try_new(26).unwrap(), Ecn::Ect0)
        .ident(0x1234)
        .src_port(0xc001)
        .ack_req(false)
        .psn(Psn::try_new(psn).unwrap())
}

fn all_reduce_header() -> EpicHeaderRepr {
    EpicHeaderRepr {
        group_id: GroupId(7),
        invocation: 3,
        collective: Collective::AllReduce,
        reduce_op: ReduceOp::Sum,
        data_type: DataType::Fp32,
        flags: EpicFlags::default(),
        root_rank: 0,
        first_psn: Psn::try_new(101).unwrap(),
        packet_count: 3,
        element_count: 600,
        payload_bytes_per_packet: 1024,
    }
}

fn control(h: &EpicHeaderRepr, psn: u32) -> Vec<u8> {
    let mut payload = vec![0u8; h.buffer_len()];
    h.emit(&mut payload).unwrap();
    base(Opcode::RcSendOnlyWithImmediate, psn)
        .immdt(EPIC_IMM_TAG)
        .ack_req(true)
        .payload(&payload)
        .build()
}

fn data(opcode: Opcode, psn: u32, len: usize, fill: u8) -> Vec<u8> {
    let payload: Vec<u8> = (0..len).map(|i| fill.wrapping_add(i as u8)).collect();
    base(opcode, psn)
        .ack_req(matches!(opcode, Opcode::RcSendLast | Opcode::RcSendOnly))
        .payload(&payload)
        .build()
}

/// An ACK from 10.0.0.2 back to 10.0.0.1.
fn ack(syndrome: Syndrome, psn: u32, msn: u32) -> Vec<u8> {
    base(Opcode::RcAcknowledge, psn)
        .aeth(AethRepr { syndrome, msn })
        .src_mac(mac(2))
        .dst_mac(mac(1))
        .src_ip(Ipv4Addr::new(10, 0, 0, 2))
        .dst_ip(Ipv4Addr::new(10, 0, 0, 1))
        .build()
}

/// Fixes the IPv4 checksum and ICRC after a deliberate edit.
fn refresh(mut f: Vec<u8>) -> Vec<u8> {
    refresh_checksums(&mut f).unwrap();
    f
}

/// The golden frames, each with what it exercises.
fn golden_frames() -> Vec<(&'static str, Vec<u8>)> {
    let mut v: Vec<(&'static str, Vec<u8>)> = Vec::new();
    // [WIRE-100] [WIRE-101] An EPIC control message, then its three data packets.
    v.push((
        "epic control: all_reduce",
        control(&all_reduce_header(), 100),
    ));
    v.push(("send first", data(Opcode::RcSendFirst, 101, 1024, 0)));
    v.push(("send middle", data(Opcode::RcSendMiddle, 102, 1024, 1)));
    v.push(("send last, short", data(Opcode::RcSendLast, 103, 352, 2)));
    // [WIRE-045] ACK, NAK, RNR NAK.
    v.push(("ack", ack(Syndrome::ACK, 103, 2)));
    v.push(("nak psn sequence error", ack(Syndrome::NAK_SEQ, 102, 1)));
    v.push(("rnr nak", ack(Syndrome::rnr_nak(14).unwrap(), 103, 1)));
    // [WIRE-044] [WIRE-046] RDMA WRITE only with immediate (RETH + ImmDt), odd length.
    let ext = ExtHeaders {
        reth: Some(RethRepr {
            va: 0x7f00_0000_1000,
            rkey: 0xabcd,
            dma_len: 13,
        }),
        immdt: Some(ImmDtRepr(0xdead_beef)),
        ..ExtHeaders::default()
    };
    v.push((
        "rdma write only with immediate, pad 3",
        base(Opcode::RcRdmaWriteOnlyWithImmediate, 200)
            .ext(ext)
            .payload(&[7u8; 13])
            .build(),
    ));
    // [WIRE-048] UD SEND with DETH.
    let ext = ExtHeaders {
        deth: Some(DethRepr {
            qkey: 0x8001_0000,
            src_qp: Qpn::try_new(1).unwrap(),
        }),
        ..ExtHeaders::default()
    };
    v.push((
        "ud send only",
        base(Opcode::UdSendOnly, 5)
            .ext(ext)
            .payload(&[0x55; 64])
            .build(),
    ));
    // [WIRE-049] FetchAdd and its ATOMIC ACK.
    let ext = ExtHeaders {
        atomic_eth: Some(AtomicEthRepr {
            va: 0x1000,
            rkey: 9,
            swap_add: 1,
            compare: 0,
        }),
        ..ExtHeaders::default()
    };
    v.push(("fetch add", base(Opcode::RcFetchAdd, 300).ext(ext).build()));
    let ext = ExtHeaders {
        aeth: Some(AethRepr {
            syndrome: Syndrome::ACK,
            msn: 9,
        }),
        atomic_ack_eth: Some(AtomicAckEthRepr {
            orig_remote_data: 41,
        }),
        ..ExtHeaders::default()
    };
    v.push((
        "atomic ack",
        base(Opcode::RcAtomicAcknowledge, 300).ext(ext).build(),
    ));
    // [WIRE-047] SEND only with invalidate.
    let ext = ExtHeaders {
        ieth: Some(IethRepr { rkey: 0x77 }),
        ..ExtHeaders::default()
    };
    v.push((
        "send only with invalidate",
        base(Opcode::RcSendOnlyWithInvalidate, 7)
            .ext(ext)
            .payload(&[1; 8])
            .build(),
    ));
    // [WIRE-051] CNP.
    let ext = ExtHeaders {
        cnp: Some(CnpRepr),
        ..ExtHeaders::default()
    };
    let cnp = base(Opcode::Cnp, 0)
        .ext(ext)
        .ecn_bits(false, true)
        .tos(Dscp::try_new(48).unwrap(), Ecn::Ect0);
    v.push(("cnp", cnp.build()));
    // [WIRE-010] VLAN-tagged barrier control message.
    let barrier = EpicHeaderRepr {
        collective: Collective::Barrier,
        reduce_op: ReduceOp::None,
        data_type: DataType::None,
        packet_count: 0,
        element_count: 0,
        payload_bytes_per_packet: 0,
        invocation: 4,
        first_psn: Psn::try_new(105).unwrap(),
        ..all_reduce_header()
    };
    let mut payload = vec![0u8; 36];
    barrier.emit(&mut payload).unwrap();
    let tagged = base(Opcode::RcSendOnlyWithImmediate, 104)
        .immdt(EPIC_IMM_TAG)
        .vlan(Some(VlanTag {
            pcp: VlanPcp::try_new(3).unwrap(),
            dei: false,
            vid: VlanId::try_new(100).unwrap(),
        }))
        .payload(&payload);
    v.push(("epic control: barrier, vlan 100", tagged.build()));
    // [WIRE-022] Ethernet padding after the datagram is ignored.
    let mut padded = data(Opcode::RcSendOnly, 9, 0, 0);
    padded.extend_from_slice(&[0u8; 6]);
    v.push(("empty send only + ethernet padding", padded));

    // Malformed and foreign frames: each yields a typed error, never a panic.
    // [WIRE-071] Bad ICRC.
    let mut bad = data(Opcode::RcSendOnly, 10, 16, 3);
    let n = bad.len();
    bad[n - 5] ^= 0x01;
    v.push(("bad icrc (payload bit flipped)", bad));
    // [WIRE-025] Bad IPv4 checksum, ICRC intact.
    let mut bad = data(Opcode::RcSendOnly, 11, 16, 3);
    bad[14 + 8] = 1; // TTL, masked by the ICRC
    v.push(("bad ipv4 checksum (ttl edited)", bad));
    // [WIRE-021] IHL 6: four option bytes before a UDP header to 4791.
    v.push((
        "ipv4 options (ihl 6)",
        with_ip_options(data(Opcode::RcSendOnly, 12, 16, 3)),
    ));
    // [WIRE-023] Fragment.
    let mut bad = data(Opcode::RcSendOnly, 13, 16, 3);
    bad[14 + 6] = 0x20;
    v.push(("ipv4 fragment (mf)", refresh_ip_only(bad)));
    // [WIRE-041] TVer 1.
    let mut bad = data(Opcode::RcSendOnly, 14, 16, 3);
    bad[42 + 1] |= 0x01;
    v.push(("bth tver 1", refresh(bad)));
    // [WIRE-042] Unknown opcode.
    let mut bad = data(Opcode::RcSendOnly, 15, 16, 3);
    bad[42] = 0x15;
    v.push(("unknown opcode 0x15", refresh(bad)));
    // [WIRE-043] Pad count larger than what precedes the ICRC.
    let mut bad = data(Opcode::RcSendOnly, 16, 0, 0);
    bad[43] |= 0x30;
    v.push(("pad overrun", refresh(bad)));
    // [WIRE-102] EPIC version 2.
    let mut bad = control(&all_reduce_header(), 17);
    bad[58] = 2;
    v.push(("epic version 2", refresh(bad)));
    // [WIRE-112] EPIC packet count disagreeing with the element count.
    let mut h = all_reduce_header();
    h.packet_count = 9;
    v.push(("epic invalid packet count", control(&h, 18)));
    // [WIRE-061] Truncated inside the BTH.
    let t = data(Opcode::RcSendOnly, 19, 16, 3);
    v.push((
        "truncated in bth (ipv4 length beyond frame)",
        t[..48].to_vec(),
    ));
    // [WIRE-031] UDP length disagreeing with IPv4.
    let mut bad = data(Opcode::RcSendOnly, 20, 16, 3);
    bad[38..40].copy_from_slice(&20u16.to_be_bytes());
    v.push(("udp length mismatch", refresh_ip_only(bad)));
    // [WIRE-011] [WIRE-030] Not RoCEv2: ARP, and UDP to port 53.
    let mut arp = vec![0xffu8; 6];
    arp.extend_from_slice(&mac(1).0);
    arp.extend_from_slice(&[0x08, 0x06]);
    arp.extend_from_slice(&[0u8; 28]);
    v.push(("arp (not roce)", arp));
    let mut dns = data(Opcode::RcSendOnly, 21, 16, 3);
    dns[36..38].copy_from_slice(&53u16.to_be_bytes());
    v.push(("udp port 53 (not roce)", dns));
    // A frame too short for an Ethernet header.
    v.push(("runt", vec![0x02, 0, 0, 0, 0, 2, 0x02]));
    // [WIRE-021] [WIRE-030] Options in front of UDP to port 53: not RoCEv2.
    let mut dns = data(Opcode::RcSendOnly, 22, 16, 3);
    dns[36..38].copy_from_slice(&53u16.to_be_bytes());
    v.push(("ipv4 options, udp port 53 (not roce)", with_ip_options(dns)));
    // [WIRE-023] A fragment is not RoCEv2 traffic.
    let mut frag = data(Opcode::RcSendOnly, 23, 16, 3);
    frag[14 + 7] = 0x10;
    v.push(("ipv4 non-first fragment (not roce)", refresh_ip_only(frag)));
    v
}

/// Inserts four NOP option bytes after the IPv4 header (IHL 6).
fn with_ip_options(f: Vec<u8>) -> Vec<u8> {
    let mut out = f[..34].to_vec();
    out.extend_from_slice(&[1, 1, 1, 1]);
    out.extend_from_slice(&f[34..]);
    out[14] = 0x46;
    let total = u16::from_be_bytes([out[16], out[17]]) + 4;
    out[16..18].copy_from_slice(&total.to_be_bytes());
    out
}

fn refresh_ip_only(mut f: Vec<u8>) -> Vec<u8> {
    Ipv4Packet::new_unchecked(&mut f[14..]).fill_checksum();
    f
}

const T0_NS: u64 = 1_767_225_600_000_000_000; // 2026-01-01T00:00:00Z

fn write_pcap(frames: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = PcapWriter::new(&mut out).unwrap();
    for (i, (_, f)) in frames.iter().enumerate() {
        let ts = Duration::from_nanos(T0_NS + i as u64 * 1_250);
        w.write_packet(&PcapPacket::new(ts, f.len() as u32, f))
            .unwrap();
    }
    w.into_writer();
    out
}

fn bless_or_compare(path: &Path, actual: &[u8]) {
    if std::env::var_os("EPIC_BLESS").is_some() {
        fs::write(path, actual).unwrap();
        return;
    }
    let expected = fs::read(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; regenerate with EPIC_BLESS=1 cargo test -p epic-cli --test golden",
            path.display()
        )
    });
    if expected != actual {
        let (e, a) = (
            String::from_utf8_lossy(&expected),
            String::from_utf8_lossy(actual),
        );
        for (i, (el, al)) in e.lines().zip(a.lines()).enumerate() {
            assert_eq!(el, al, "{} line {}", path.display(), i + 1);
        }
        panic!(
            "{} differs ({} vs {} bytes); regenerate on purpose with EPIC_BLESS=1",
            path.display(),
            expected.len(),
            actual.len()
        );
    }
}

// [WIRE-001] [WIRE-060] [WIRE-063] The golden pcap is reproduced byte for
// byte from the library, and `epic decode` prints exactly the blessed JSON
// Lines and text for it.
#[test]
fn golden_pcap_and_decode() {
    let frames = golden_frames();
    let pcap = write_pcap(&frames);
    let dir = fixtures();
    fs::create_dir_all(&dir).unwrap();
    let pcap_path = dir.join("golden.pcap");
    bless_or_compare(&pcap_path, &pcap);
    let names: String = frames
        .iter()
        .enumerate()
        .map(|(i, (name, _))| format!("{}\t{name}\n", i + 1))
        .collect();
    bless_or_compare(&dir.join("golden.frames.tsv"), names.as_bytes());
    for (format, file) in [("json", "golden.jsonl"), ("text", "golden.txt")] {
        let out = epic()
            .args(["decode", "--format", format])
            .arg(&pcap_path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        bless_or_compare(&dir.join(file), &out.stdout);
    }
}

// [WIRE-060] Checks of the decoded golden records that do not depend on the
// blessed files: the record of each frame says what the frame is.
#[test]
fn golden_records_say_what_each_frame_is() {
    let frames = golden_frames();
    let dir = tempdir("records");
    let path = dir.join("g.pcap");
    fs::write(&path, write_pcap(&frames)).unwrap();
    let out = epic()
        .args(["decode", "--format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), frames.len());
    for ((name, bytes), rec) in frames.iter().zip(&lines) {
        assert_eq!(rec["len"], bytes.len(), "{name}");
        let err = &rec["error"];
        let layer = err["layer"].as_str();
        let expect_layer = match *name {
            "ipv4 options (ihl 6)" | "ipv4 fragment (mf)" => Some("ipv4"),
            "bth tver 1" | "unknown opcode 0x15" => Some("bth"),
            "truncated in bth (ipv4 length beyond frame)" => Some("ipv4"),
            "pad overrun" => Some("payload"),
            "epic version 2" | "epic invalid packet count" => Some("epic"),
            "udp length mismatch"
            | "udp port 53 (not roce)"
            | "ipv4 options, udp port 53 (not roce)" => Some("udp"),
            "ipv4 non-first fragment (not roce)" => Some("ipv4"),
            "arp (not roce)" | "runt" => Some("ethernet"),
            _ => None,
        };
        assert_eq!(layer, expect_layer, "{name}: {rec}");
        let icrc_ok = rec["icrc_ok"].as_bool();
        match *name {
            "bad icrc (payload bit flipped)" => assert_eq!(icrc_ok, Some(false)),
            "arp (not roce)"
            | "runt"
            | "udp length mismatch"
            | "ipv4 options (ihl 6)"
            | "ipv4 fragment (mf)"
            | "truncated in bth (ipv4 length beyond frame)"
            | "udp port 53 (not roce)"
            | "ipv4 options, udp port 53 (not roce)"
            | "ipv4 non-first fragment (not roce)" => {
                assert_eq!(icrc_ok, None, "{name}")
            }
            _ => assert_eq!(icrc_ok, Some(true), "{name}"),
        }
        let roce = rec["roce"].as_bool().unwrap();
        assert_eq!(
            roce,
            !matches!(
                *name,
                "arp (not roce)"
                    | "runt"
                    | "udp port 53 (not roce)"
                    | "udp length mismatch"
                    | "ipv4 options (ihl 6)"
                    | "ipv4 fragment (mf)"
                    | "truncated in bth (ipv4 length beyond frame)"
                    | "ipv4 options, udp port 53 (not roce)"
                    | "ipv4 non-first fragment (not roce)"
            ),
            "{name}"
        );
    }
    assert_eq!(lines[0]["epic"]["collective"], "all_reduce");
    assert_eq!(lines[0]["epic"]["first_psn"], 101);
    assert_eq!(lines[0]["immdt"], EPIC_IMM_TAG);
    assert_eq!(lines[3]["payload_len"], 352);
    assert_eq!(lines[4]["aeth"]["kind"], "ack");
    assert_eq!(lines[5]["aeth"]["syndrome"], 0x60);
    assert_eq!(lines[6]["aeth"]["value"], 14);
    assert_eq!(lines[7]["bth"]["pad_count"], 3);
    assert_eq!(lines[7]["payload_len"], 13);
    assert_eq!(lines[13]["eth"]["vlan"]["vid"], 100);
    assert_eq!(lines[13]["epic"]["collective"], "barrier");
    assert_eq!(lines[15]["ipv4"]["checksum_ok"], true);
    assert_eq!(lines[16]["ipv4"]["checksum_ok"], false);
    assert_eq!(lines[16]["icrc_ok"], true);
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("epic-golden-{tag}-{}", std::process::id()));
    fs::create_dir_all(&d).unwrap();
    d
}

// pcapng with nanosecond and default (microsecond) timestamp resolution
// decodes to the same records as pcap.
#[test]
fn pcapng_timestamps_and_frames() {
    let frames = golden_frames();
    let dir = tempdir("pcapng");
    let pcap = dir.join("g.pcap");
    fs::write(&pcap, write_pcap(&frames)).unwrap();
    for resol in [Some(9u8), None] {
        let mut out = Vec::new();
        let mut w = PcapNgWriter::new(&mut out).unwrap();
        let mut idb = InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: 0,
            options: vec![],
        };
        if let Some(r) = resol {
            idb.options.push(InterfaceDescriptionOption::IfTsResol(r));
        }
        w.write_pcapng_block(idb).unwrap();
        for (i, (_, f)) in frames.iter().enumerate() {
            let ns = T0_NS + i as u64 * 1_250;
            // pcap-file writes the raw value; in microsecond units it is ns / 1000.
            let raw = if resol == Some(9) { ns } else { ns / 1_000 };
            let epb = EnhancedPacketBlock {
                interface_id: 0,
                timestamp: Duration::from_nanos(raw),
                original_len: f.len() as u32,
                data: Cow::Borrowed(f),
                options: vec![],
            };
            w.write_pcapng_block(epb).unwrap();
        }
        w.into_inner();
        let ng = dir.join("g.pcapng");
        fs::write(&ng, out).unwrap();
        let a = epic()
            .args(["decode", "--format", "json"])
            .arg(&pcap)
            .output()
            .unwrap();
        let b = epic()
            .args(["decode", "--format", "json"])
            .arg(&ng)
            .output()
            .unwrap();
        assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
        let a: Vec<serde_json::Value> = String::from_utf8(a.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let b: Vec<serde_json::Value> = String::from_utf8(b.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            let (tx, ty) = (x["ts"].as_f64().unwrap(), y["ts"].as_f64().unwrap());
            // Microsecond resolution rounds the 1.25 µs steps down.
            assert!((tx - ty).abs() < 1.5e-6, "{resol:?}: {tx} vs {ty}");
            let mut x = x.clone();
            let mut y = y.clone();
            x["ts"] = serde_json::Value::Null;
            y["ts"] = serde_json::Value::Null;
            assert_eq!(x, y);
        }
    }
}

// Unreadable, empty, foreign, non-Ethernet and truncated captures: a
// one-line message and exit code 2, never a panic.
#[test]
fn bad_captures_exit_2_with_one_line() {
    let dir = tempdir("bad");
    let frames = golden_frames();
    let good = write_pcap(&frames);
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("text", b"hello, this is not a capture\n".to_vec()),
        ("short magic", vec![0xd4, 0xc3]),
        ("header only, truncated", good[..20].to_vec()),
        ("truncated record", good[..good.len() - 7].to_vec()),
        (
            "pcapng magic, garbage",
            [&[0x0a, 0x0d, 0x0d, 0x0a][..], &[0xff; 40]].concat(),
        ),
    ];
    let mut linux_sll = good.clone();
    linux_sll[20..24].copy_from_slice(&113u32.to_le_bytes());
    cases.push(("linux sll link type", linux_sll));
    for (name, bytes) in &cases {
        let p = dir.join(format!("{}.pcap", name.replace([' ', ','], "_")));
        fs::write(&p, bytes).unwrap();
        let out = epic().arg("decode").arg(&p).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.starts_with("epic decode: "), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
    // A truncated final record still prints the frames before it.
    let p = dir.join("truncated_record.pcap");
    let out = epic()
        .args(["decode", "--format", "json"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().lines().count(),
        frames.len() - 1
    );
    let missing = epic()
        .arg("decode")
        .arg(dir.join("no-such-file.pcap"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
}

// [WIRE-052] [WIRE-053] [WIRE-054] `epic decode` shows a SACK's cumulative
// point and the runs received after it, in text and JSON; a malformed
// SACKETH is reported at the `sack` layer.
#[test]
fn sack_decodes() {
    // cum 100; 102..=104 and 133 received.
    let sack =
        SackRepr::from_words(Psn::try_new(100).unwrap(), &[0x7000_0000, 0x8000_0000]).unwrap();
    let good = base(Opcode::RcSack, 0).sack(&sack).build();
    let mut eth = [0u8; 12];
    sack.emit(&mut eth).unwrap();
    eth[4] |= 0x80; // bit 0: PSN 101 claimed received
    let bad = base(Opcode::RcSack, 0).sack(&sack).payload(&eth).build();
    let dir = tempdir("sack");
    let path = dir.join("sack.pcap");
    fs::write(&path, write_pcap(&[("sack", good), ("sack bit 0", bad)])).unwrap();

    let text = epic()
        .args(["decode", "--format", "text"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(text.status.success());
    let text = String::from_utf8(text.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains("RC_SACK qp=0x000011 psn=100"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains(" ACK(credit 31) msn=0 SACK cum=100 +[102-104,133]"),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("ERROR sack@"), "{}", lines[1]);

    let json = epic()
        .args(["decode", "--format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(json.status.success());
    let recs: Vec<serde_json::Value> = String::from_utf8(json.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs[0]["bth"]["opcode_name"], "RC_SACK");
    assert_eq!(recs[0]["sack"]["cumulative"], 100);
    assert_eq!(recs[0]["sack"]["words"], 2);
    assert_eq!(
        recs[0]["sack"]["received"],
        serde_json::json!([[102, 104], [133, 133]])
    );
    assert_eq!(recs[1]["error"]["layer"], "sack");
    assert!(recs[1].get("sack").is_none());
}
