//! DCQCN at Mode III hops (SPEC §17.13): with the group's congestion
//! control given to the context ([`Context::set_cc`]), every hop is a
//! DCQCN sender toward its peer, paced by a [`ReactionPoint`] that the
//! peer's CNPs cut, and a notification point that answers the peer's
//! CE-marked data and control messages with (paced) CNPs. Without it
//! nothing here runs and every frame is what it was. [CC-130]…[CC-136]
//!
//! The blocks are the RC QP's (`crate::cc`), one pair per hop, held beside
//! the arena as the SR records are. No clock: the pacing instant and the
//! reaction point's timers reach the driver through the context's
//! deadline, and `timeout` runs them.
//!
//! [`Context::set_cc`]: crate::engine::Context::set_cc

use alloc::vec::Vec;
use core::mem::size_of;

use super::state::Augmented;
use crate::cc::{CnpPacer, CnpVerdict, ReactionPoint};
use crate::engine::id::EdgeId;
use crate::engine::io::Io;
use crate::engine::shared::Shared;
use crate::roce::CcConfig;
use crate::time::Instant;
use crate::wire::{Ecn, EtherType, EthernetFrame, Ipv4Packet, Opcode, RoceFrame};

/// One hop's congestion control. [CC-130]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct HopCc {
    /// The hop's rate toward its peer. [CC-131] [CC-132]
    pub(crate) rp: ReactionPoint,
    /// CNPs for the peer's CE-marked packets. [CC-133]
    pub(crate) np: CnpPacer,
    /// Data waited for the pacer at a transmission opportunity: the
    /// instant it may start, when the hop is listed again. [CC-131]
    pub(crate) paced_until: Option<Instant>,
}

impl HopCc {
    fn deadline(&self) -> Option<Instant> {
        match (self.paced_until, self.rp.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl Augmented {
    /// Gives every hop a reaction point and a notification point from
    /// `cc`, or takes them away (`None`, the default). A configuration
    /// whose DCQCN constants fail [CC-025] leaves the hops without, as
    /// an RC QP refuses it. Allocates: call it at install. [CC-130]
    pub(crate) fn set_cc(&mut self, cc: Option<CcConfig>) {
        self.cc = match cc.map(|c| (ReactionPoint::try_new(c.dcqcn), c.cnp_interval)) {
            Some((Ok(rp), interval)) => (0..self.hops.len())
                .map(|_| HopCc {
                    rp: rp.clone(),
                    np: CnpPacer::new(interval),
                    paced_until: None,
                })
                .collect(),
            _ => Vec::new(),
        };
    }

    /// Bytes of the hops' congestion control, 0 without it.
    pub(crate) fn cc_bytes(&self) -> usize {
        self.cc.len() * size_of::<HopCc>()
    }

    /// A hop's reaction point, for tests and diagnostics.
    #[cfg(test)]
    pub(crate) fn hop_cc(&self, ep: EdgeId) -> Option<&HopCc> {
        self.cc.get(ep.index())
    }

    /// A frame from edge `ep`'s peer, before the transport sees it: a CNP
    /// cuts the hop's rate and is consumed (`true`); a CE-marked data or
    /// control message asks the notification point for a CNP toward the
    /// peer, and goes on. Without cc nothing happens (`false`), and a CNP
    /// is dropped as an unsupported opcode as before. [CC-132] [CC-133]
    pub(crate) fn cc_receive(
        &mut self,
        s: &mut Shared,
        io: &mut Io<'_>,
        ep: EdgeId,
        f: &RoceFrame<'_>,
    ) -> bool {
        let Some(c) = self.cc.get_mut(ep.index()) else {
            return false;
        };
        if f.bth.opcode == Opcode::Cnp {
            io.counters.hop_rx_cnps += 1;
            let before = c.rp.rate();
            c.rp.on_cnp(io.now);
            if c.rp.rate() < before {
                io.counters.hop_rate_cuts += 1;
            }
            return true;
        }
        let request = matches!(
            f.bth.opcode,
            Opcode::RcSendFirst
                | Opcode::RcSendMiddle
                | Opcode::RcSendLast
                | Opcode::RcSendOnly
                | Opcode::RcSendOnlyWithImmediate
        );
        if request && f.ipv4.ecn == Ecn::Ce {
            io.counters.hop_ce_marked += 1;
            if c.np.on_ce_marked(io.now) == CnpVerdict::Send {
                io.counters.hop_ce_cnps += 1;
                if let Some(h) = self.hops.get_mut(ep.index()) {
                    h.cnp = true;
                }
                s.list(io, ep);
            }
        }
        false
    }

    /// Whether the hop of `ep` must hold its next data packet for the
    /// pacer now: it then remembers the instant the packet may start, and
    /// its timer lists the hop again. [CC-131]
    pub(crate) fn cc_paced(&mut self, s: &Shared, io: &mut Io<'_>, ep: EdgeId) -> bool {
        let Some(c) = self.cc.get(ep.index()) else {
            return false;
        };
        let at = c.rp.earliest(io.now);
        if at <= io.now {
            return false;
        }
        // Only a hop with data waiting counts a hold and arms the wake-up.
        if self.resend_ready(s, ep).is_none() && self.ready(s, ep).is_none() {
            return true;
        }
        io.counters.hop_paced += 1;
        if let Some(c) = self.cc.get_mut(ep.index()) {
            c.paced_until = Some(at);
        }
        true
    }

    /// A data packet or control message of `frame.len()` bytes left the
    /// hop of `ep`: it goes ECN-capable (ECT(0)) and the pacer moves on.
    /// [CC-131] [CC-134]
    pub(crate) fn cc_sent(&mut self, io: &Io<'_>, ep: EdgeId, frame: &mut [u8]) {
        let Some(c) = self.cc.get_mut(ep.index()) else {
            return;
        };
        set_ect0(frame);
        c.rp.on_sent(io.now, frame.len() as u64);
    }

    /// The hops' earliest congestion-control deadline: a held packet's
    /// start, or a reaction point's timer. [CC-131]
    pub(crate) fn cc_deadline(&self) -> Option<Instant> {
        self.cc.iter().filter_map(HopCc::deadline).min()
    }

    /// Runs the reaction points' timers due at `now` and lists every hop
    /// whose held packet may now start. [CC-131] [CC-132]
    pub(crate) fn cc_timeouts(&mut self, s: &mut Shared, io: &mut Io<'_>) {
        let now = io.now;
        for (i, c) in self.cc.iter_mut().enumerate() {
            c.rp.handle_timeout(now);
            if c.paced_until.is_some_and(|t| t <= now) {
                c.paced_until = None;
                s.list(io, EdgeId(u16::try_from(i).unwrap_or(u16::MAX)));
            }
        }
    }
}

/// Sets ECT(0) in the IPv4 ECN field of a Not-ECT Ethernet frame and
/// recomputes the IPv4 header checksum; any other frame is left as it
/// is. The ICRC masks the TOS byte, so it stays valid. [CC-134]
fn set_ect0(frame: &mut [u8]) {
    let Ok(eth) = EthernetFrame::new_checked(&*frame) else {
        return;
    };
    if eth.ethertype() != EtherType::Ipv4 {
        return;
    }
    let at = eth.header_len();
    let Some(datagram) = frame.get_mut(at..) else {
        return;
    };
    let Ok(mut ip) = Ipv4Packet::new_checked(datagram) else {
        return;
    };
    if ip.ecn() == Ecn::NotEct {
        let tos = ip.tos();
        ip.set_tos(tos | Ecn::Ect0.bits());
        ip.fill_checksum();
    }
}
