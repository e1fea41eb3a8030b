//! Every frame the DUT sends: a valid RoCEv2 frame ([WIRE-*]) addressed,
//! by TranslateHeader, to the peer of the port it leaves by ([ENG-053]).

use epic_proto::wire::{
    BthRepr, FrameLayout, Ipv4Packet, LaxFrame, Opcode, RoceFrame, Syndrome, ROCEV2_PORT,
};

use crate::frames::{self, Kind};
use crate::harness::Observation;

use super::{Check, Verdict};

/// Reports the first frame that breaks a rule, and how many do.
struct Tally {
    first: Option<String>,
    bad: usize,
    seen: usize,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            first: None,
            bad: 0,
            seen: 0,
        }
    }

    fn note(&mut self, ok: Result<(), String>, at: usize, port: u16) {
        self.seen += 1;
        if let Err(why) = ok {
            self.bad += 1;
            if self.first.is_none() {
                self.first = Some(format!("output #{at} on port {port}: {why}"));
            }
        }
    }

    fn verdict(self, what: &str) -> Verdict {
        match self.first {
            _ if self.seen == 0 => Verdict::Skip(format!("the DUT sent no {what}")),
            None => Verdict::Pass,
            Some(first) => Verdict::Fail(format!(
                "{} of {} frames; first: {first}",
                self.bad, self.seen
            )),
        }
    }
}

fn ipv4_rules(frame: &[u8]) -> Result<(), String> {
    let l = FrameLayout::locate(frame).map_err(|e| format!("not a RoCEv2 frame: {e}"))?;
    let h = frame.get(l.ipv4..l.end).unwrap_or_default();
    let p = Ipv4Packet::new_checked(h).map_err(|e| format!("IPv4 header: {e}"))?;
    if p.version() != 4 || p.ihl() != 5 {
        return Err(format!("IPv4 version {} IHL {}", p.version(), p.ihl()));
    }
    if !p.dont_frag() || p.more_frags() || p.frag_offset() != 0 {
        return Err("fragmentation fields are not DF=1, MF=0, offset 0".into());
    }
    if !p.verify_checksum() {
        return Err(format!(
            "IPv4 header checksum {:#06x} is wrong",
            p.checksum()
        ));
    }
    Ok(())
}

fn udp_rules(f: &RoceFrame<'_>) -> Result<(), String> {
    if f.udp.dst_port != ROCEV2_PORT {
        return Err(format!("UDP destination port {}", f.udp.dst_port));
    }
    if f.udp.checksum != 0 {
        return Err(format!("UDP checksum {:#06x}, not 0", f.udp.checksum));
    }
    Ok(())
}

/// `credits`: the DUT's ACKs may carry end-to-end credits (a Mode I
/// switch's edges advertise them, [M1-013] [RC-101]); otherwise every ACK
/// says 0x1F, as rxe's. [WIRE-045]
fn bth_rules(f: &RoceFrame<'_>, credits: bool) -> Result<(), String> {
    let b = &f.bth;
    if b.tver != 0 {
        return Err(format!("TVer {}", b.tver));
    }
    if b.pkey != BthRepr::DEFAULT_PKEY {
        return Err(format!("P_Key {:#06x}", b.pkey));
    }
    if b.pad_count != BthRepr::pad_for(f.payload.len()) {
        return Err(format!(
            "pad count {} for {} payload bytes",
            b.pad_count,
            f.payload.len()
        ));
    }
    if let Some(a) = f.ext.aeth {
        if let Syndrome::Ack { credit } = a.syndrome {
            if credit != 31 && !credits {
                return Err(format!("ACK syndrome credit {credit}, not 31 (0x1f)"));
            }
        }
    }
    Ok(())
}

/// [WIRE-002] [WIRE-020]…[WIRE-045] [WIRE-071] [WIRE-072] [ENG-053]
/// Every output frame is well formed, with valid checksums.
pub(super) fn integrity(obs: &Observation) -> Vec<Check> {
    let mut parse = Tally::new();
    let mut length = Tally::new();
    let mut ipv4 = Tally::new();
    let mut udp = Tally::new();
    let mut bth = Tally::new();
    let mut icrc = Tally::new();
    for (i, e) in obs.trace.outputs().enumerate() {
        let f = &e.frame;
        // ARP and other traffic a switch may route is not judged here.
        if LaxFrame::parse(f).is_not_roce() {
            continue;
        }
        let parsed = RoceFrame::parse(f);
        parse.note(
            parsed.as_ref().map(|_| ()).map_err(|e| e.to_string()),
            i,
            e.port,
        );
        let Ok(p) = parsed else { continue };
        let short = f.len() < 60;
        length.note(
            if short {
                Err(format!("{} bytes, below 60", f.len()))
            } else {
                Ok(())
            },
            i,
            e.port,
        );
        ipv4.note(ipv4_rules(f), i, e.port);
        udp.note(udp_rules(&p), i, e.port);
        bth.note(bth_rules(&p, obs.case.mode == 1), i, e.port);
        let lax = LaxFrame::parse(f);
        icrc.note(
            match lax.icrc_ok {
                Some(true) => Ok(()),
                _ => Err(format!(
                    "ICRC {:#010x} does not match the frame",
                    lax.icrc.unwrap_or_default()
                )),
            },
            i,
            e.port,
        );
    }
    vec![
        Check::new(
            "roce_frame",
            &["WIRE-001", "WIRE-062"],
            parse.verdict("frames"),
        ),
        Check::new("min_length", &["WIRE-002"], length.verdict("RoCEv2 frames")),
        Check::new(
            "ipv4_header",
            &["WIRE-020", "WIRE-021", "WIRE-023", "WIRE-025", "WIRE-072"],
            ipv4.verdict("RoCEv2 frames"),
        ),
        Check::new(
            "udp_header",
            &["WIRE-030", "WIRE-032"],
            udp.verdict("RoCEv2 frames"),
        ),
        Check::new(
            "bth",
            &["WIRE-040", "WIRE-041", "WIRE-043", "WIRE-045"],
            bth.verdict("RoCEv2 frames"),
        ),
        Check::new(
            "icrc",
            &["WIRE-071", "WIRE-072", "ENG-053"],
            icrc.verdict("RoCEv2 frames"),
        ),
    ]
}

/// [WIRE-100]…[WIRE-114] [WIRE-120] Every control message or echo the
/// DUT sends carries a valid version-1 Collective Header; every data
/// packet is an RC SEND.
pub(super) fn epic_rules(obs: &Observation) -> Vec<Check> {
    let mut control = Tally::new();
    let mut data = Tally::new();
    for (i, e) in obs.trace.outputs().enumerate() {
        match frames::kind(&e.frame) {
            Kind::Control => {
                // Rule 10 (the PSN) belongs to the receiving context
                // ([CTL-054]); every other rule holds on the wire.
                let ok = RoceFrame::parse_verified_except_control_psn(&e.frame)
                    .map_err(|err| err.to_string())
                    .and_then(|f| match f.epic {
                        Some(_) => Ok(()),
                        None => Err("no Collective Header".into()),
                    });
                control.note(ok, i, e.port);
            }
            Kind::Data => {
                let op = RoceFrame::parse(&e.frame).map(|f| f.bth.opcode);
                let ok = match op {
                    Ok(
                        Opcode::RcSendFirst
                        | Opcode::RcSendMiddle
                        | Opcode::RcSendLast
                        | Opcode::RcSendOnly,
                    ) => Ok(()),
                    Ok(other) => Err(format!("data carried by {}", other.name())),
                    Err(err) => Err(err.to_string()),
                };
                data.note(ok, i, e.port);
            }
            _ => {}
        }
    }
    vec![
        Check::new(
            "collective_header",
            &[
                "WIRE-100", "WIRE-101", "WIRE-102", "WIRE-103", "WIRE-104", "WIRE-105", "WIRE-110",
                "WIRE-111", "WIRE-112", "WIRE-113", "WIRE-114",
            ],
            control.verdict("control messages"),
        ),
        Check::new("data_opcodes", &["WIRE-120"], data.verdict("data packets")),
    ]
}

/// [ENG-053] Frames leave with the switch's addresses as source and the
/// port's peer (MAC, IPv4, QPN) as destination.
pub(super) fn translation(obs: &Observation) -> Check {
    let eng = &obs.spec.switch.engine;
    let endpoints: Vec<_> = obs
        .spec
        .switch
        .contexts
        .iter()
        .flat_map(|c| c.config.endpoints.iter())
        .collect();
    let mut t = Tally::new();
    for (i, e) in obs.trace.outputs().enumerate() {
        let Ok(f) = RoceFrame::parse(&e.frame) else {
            continue;
        };
        if frames::kind(&e.frame) == Kind::NotRoce {
            continue;
        }
        let ep = endpoints
            .iter()
            .find(|ep| ep.port == e.port && ep.remote_qpn == f.bth.dest_qp);
        let ok = match ep {
            None => Err(format!(
                "destination QP {} is not the QP of port {}'s peer",
                f.bth.dest_qp, e.port
            )),
            Some(ep) if f.eth.dst != ep.remote_mac || f.ipv4.dst != ep.remote_ip => Err(format!(
                "to {} / {}, port {}'s peer is {} / {}",
                f.eth.dst, f.ipv4.dst, e.port, ep.remote_mac, ep.remote_ip
            )),
            Some(_) if f.eth.src != eng.mac || f.ipv4.src != eng.ip => Err(format!(
                "from {} / {}, the switch is {} / {}",
                f.eth.src, f.ipv4.src, eng.mac, eng.ip
            )),
            Some(_) => Ok(()),
        };
        t.note(ok, i, e.port);
    }
    Check::new("translation", &["ENG-053"], t.verdict("RoCEv2 frames"))
}
