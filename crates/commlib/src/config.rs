//! What a communicator is told: the rank, its addresses, the transport's
//! QP attributes and, when the fabric offers in-network collectives, the
//! group's INC setup. [COMM-001]

use std::net::Ipv4Addr;
use std::time::Duration;

use epic_proto::engine::Mode;
use epic_proto::host::HostConfig;
use epic_proto::roce::{Mtu, PathConfig, QpConfig, Transport};
use epic_proto::time::Duration as ProtoDuration;
use epic_proto::wire::{EthernetAddress, GroupId, Qpn};
use epic_proto::Psn;

use crate::error::ArgError;

/// The first QP number of the fallback mesh: rank r's QP toward peer p
/// is `FALLBACK_QPN_BASE + p`, and its remote QP is
/// `FALLBACK_QPN_BASE + r`. [COMM-030]
pub const FALLBACK_QPN_BASE: u32 = 0x2000;

/// The group's in-network setup, as the manager grants it (or a static
/// lab configuration mirrors the switches' contexts). [COMM-001]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IncSetup {
    /// The mode the switches run the group in: `Terminated` (Mode I),
    /// `Translated` (Mode II) or `Augmented` (Mode III).
    pub mode: Mode,
    /// The first-hop switch's IP address (the QP's remote address).
    pub switch_ip: Ipv4Addr,
    /// This rank's QP number toward the switch.
    pub qpn: Qpn,
    /// The switch endpoint's QP number for this rank.
    pub switch_qpn: Qpn,
    /// The group.
    pub group: GroupId,
    /// The group's start PSN: the QP's first send and expected PSN.
    pub start_psn: Psn,
    /// M: packets per message.
    pub message_packets: u32,
    /// W: messages this rank keeps in flight. Toward Mode I switches the
    /// window is released by results and should be the larger of the
    /// switches' W and [`result_window`](epic_proto::host::result_window)
    /// of the path [HOST-017].
    pub window: u32,
    /// Ask for fixed-order (bitwise reproducible) reductions; the switches'
    /// contexts must have been installed with reproducible buffers.
    pub reproducible: bool,
    /// The switches hold the group in blocks shared with other groups
    /// (temporal multiplexing): each call takes them with an acquire
    /// Barrier and runs on the host fallback when a switch denies them.
    /// The communicator then keeps the fallback mesh beside the QP toward
    /// the switch. [COMM-041]
    pub shared: bool,
    /// The transport profile of the QP toward the switch (every lane), as
    /// the manager granted it: SR only where every switch of the tree runs
    /// it in the group's mode. [COMM-042] [MGR-045]
    pub transport: Transport,
    /// DCQCN on the QP toward the switch (every lane), as the manager
    /// granted it; `None` (the default, an older manager): none.
    /// [CC-110] [CC-137]
    pub cc: Option<epic_proto::roce::CcConfig>,
}

/// Tuning of the host fallback. [COMM-031]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FallbackTuning {
    /// Largest RC SEND message a transfer is split into, in bytes: a
    /// multiple of 4 in 4..=16 MiB.
    pub message_bytes: u32,
    /// Messages in flight per peer, and receives posted per peer: 1..=1024.
    pub window: u16,
}

impl Default for FallbackTuning {
    /// 64 KiB messages, 16 in flight per peer.
    fn default() -> Self {
        FallbackTuning {
            message_bytes: 64 << 10,
            window: 16,
        }
    }
}

/// A communicator's configuration, checked by
/// [`Communicator::new`](crate::Communicator::new). [COMM-001]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommConfig {
    /// This rank.
    pub rank: u16,
    /// Ranks in the group (K).
    pub ranks: u16,
    /// This rank's MAC address.
    pub mac: EthernetAddress,
    /// This rank's IP address.
    pub ip: Ipv4Addr,
    /// The next hop (the first-hop switch): the Ethernet destination of
    /// every frame this rank sends.
    pub next_hop_mac: EthernetAddress,
    /// Every rank's IP address, by rank (the fallback mesh's peers).
    pub rank_ips: Vec<Ipv4Addr>,
    /// RoCE path MTU.
    pub mtu: Mtu,
    /// QP local ACK timeout exponent (4.096 µs · 2^t), 1..=31. In Mode II
    /// acknowledgements come end to end, after the slowest rank's data
    /// was aggregated, so the timeout has to cover the ranks' skew: a
    /// timeout that fires while the data is merely waiting makes every
    /// rank resend its window, and the switch resends complete results to
    /// every rank. Per-hop modes (I, III) and the fallback are acknowledged
    /// by the next hop and recover from loss (and, in Mode III, from data
    /// the switch dropped beyond its pipe's range) faster with a short one.
    /// See [`CommConfig::default_qp_timeout`].
    pub qp_timeout: u8,
    /// QP retry count after timeouts and sequence NAKs (7 = unlimited).
    pub qp_retry_cnt: u8,
    /// QP retry count after RNR NAKs (7 = unlimited).
    pub qp_rnr_retry: u8,
    /// How long one collective call may take before it fails with
    /// [`CommError::Timeout`](crate::CommError::Timeout).
    pub call_timeout: Duration,
    /// How long an INC call may make no progress (no frame for the rank's
    /// INC QP) before the rank tells its peers it is stalled; once every
    /// rank is known to be in the call, the same again without progress
    /// and the group finishes the call on the host fallback. Default 1 s.
    /// [COMM-053]
    pub inc_stall: Duration,
    /// How long the progress task keeps answering the network after
    /// `close` (so that peers get the acknowledgements they still need).
    pub linger: Duration,
    /// Host fallback tuning.
    pub fallback: FallbackTuning,
    /// The transport profile of the fallback mesh's QPs (host to host;
    /// the switches only route them): go-back-N by default, SR when the
    /// manager's answer says so (`GroupVerdict::Fallback::transport`) or
    /// the caller knows every rank runs this library. [COMM-042]
    pub transport: Transport,
    /// The group's INC setup, or `None` for the host fallback.
    pub inc: Option<IncSetup>,
}

impl CommConfig {
    /// A host-fallback configuration with defaults: MTU 4096, the QP
    /// timeout of [`default_qp_timeout`](CommConfig::default_qp_timeout),
    /// unlimited retries, a 30 s call timeout, a 1 s INC stall time, 20 ms
    /// of linger, default fallback tuning, no INC.
    pub fn new(
        rank: u16,
        mac: EthernetAddress,
        ip: Ipv4Addr,
        next_hop_mac: EthernetAddress,
        rank_ips: Vec<Ipv4Addr>,
    ) -> CommConfig {
        CommConfig {
            rank,
            ranks: u16::try_from(rank_ips.len()).unwrap_or(u16::MAX),
            mac,
            ip,
            next_hop_mac,
            rank_ips,
            mtu: Mtu::Mtu4096,
            qp_timeout: CommConfig::default_qp_timeout(None),
            qp_retry_cnt: 7,
            qp_rnr_retry: 7,
            call_timeout: Duration::from_secs(30),
            inc_stall: Duration::from_secs(1),
            linger: Duration::from_millis(20),
            fallback: FallbackTuning::default(),
            transport: Transport::Gbn,
            inc: None,
        }
    }

    /// The same configuration with INC; also sets `qp_timeout` to
    /// [`default_qp_timeout`](CommConfig::default_qp_timeout) of the mode
    /// (set it afterwards to choose another).
    pub fn with_inc(mut self, inc: IncSetup) -> CommConfig {
        self.qp_timeout = CommConfig::default_qp_timeout(Some(inc.mode));
        self.inc = Some(inc);
        self
    }

    /// The QP timeout exponent a mode wants by default. [COMM-014]
    ///
    /// - Mode II: 14 (≈ 67 ms, rxe's default). Acknowledgements come end
    ///   to end, once the slowest rank's data is aggregated; a timer that
    ///   fires while data merely waits makes the ranks resend their
    ///   windows and the switch resend complete results to every rank.
    /// - Mode III: 8 (≈ 1 ms). The switch drops data beyond its pipe's
    ///   range [M3-020], and a rank that ran ahead recovers on its timer.
    /// - Mode I and the fallback: 12 (≈ 17 ms). The next hop acknowledges,
    ///   but in an in-process lab the peer may wait for a CPU for a few
    ///   milliseconds, and every spurious timeout resends a window.
    pub const fn default_qp_timeout(mode: Option<Mode>) -> u8 {
        match mode {
            Some(Mode::Translated) => 14,
            Some(Mode::Augmented) => 8,
            Some(Mode::Terminated) | None => 12,
        }
    }

    /// Checks every field. [COMM-012]
    pub fn validate(&self) -> Result<(), ArgError> {
        if self.ranks == 0 {
            return Err(ArgError::ZeroRanks);
        }
        if self.rank >= self.ranks {
            return Err(ArgError::RankOutOfRange {
                rank: self.rank,
                ranks: self.ranks,
            });
        }
        if self.rank_ips.len() != usize::from(self.ranks) {
            return Err(ArgError::RankIps {
                ranks: self.ranks,
                got: self.rank_ips.len(),
            });
        }
        if self.rank_ips.get(usize::from(self.rank)) != Some(&self.ip) {
            return Err(ArgError::OwnIp { rank: self.rank });
        }
        let mut sorted: Vec<(Ipv4Addr, u16)> = self.rank_ips.iter().copied().zip(0..).collect();
        sorted.sort_unstable();
        for w in sorted.windows(2) {
            if let [a, b] = w {
                if a.0 == b.0 {
                    return Err(ArgError::DuplicateIp {
                        a: a.1.min(b.1),
                        b: a.1.max(b.1),
                    });
                }
            }
        }
        range("qp_timeout", self.qp_timeout.into(), 1, 31)?;
        range("qp_retry_cnt", self.qp_retry_cnt.into(), 0, 7)?;
        range("qp_rnr_retry", self.qp_rnr_retry.into(), 0, 7)?;
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        range("call_timeout_ms", ms(self.call_timeout), 1, 86_400_000)?;
        range("linger_ms", ms(self.linger), 0, 60_000)?;
        range("inc_stall_ms", ms(self.inc_stall), 1, 86_400_000)?;
        let mb = self.fallback.message_bytes;
        // A recovery note is 12 bytes. [COMM-052]
        range("fallback.message_bytes", mb.into(), 16, 16 << 20)?;
        if !mb.is_multiple_of(4) {
            return Err(ArgError::OutOfRange {
                field: "fallback.message_bytes (a multiple of 4)",
                value: mb.into(),
                min: 16,
                max: 16 << 20,
            });
        }
        range("fallback.window", self.fallback.window.into(), 1, 1024)?;
        if let Some(inc) = &self.inc {
            if self.ranks < 2 {
                return Err(ArgError::IncNeedsTwoRanks);
            }
            range("inc.message_packets", inc.message_packets.into(), 1, 1024)?;
            range("inc.window", inc.window.into(), 1, 4096)?;
            self.inc_qp(inc).validate().map_err(ArgError::Qp)?;
            // Frames reach the QP their destination QPN names: with shared
            // blocks the mesh runs beside the switch QP. [COMM-041]
            let qpn = inc.qpn.value();
            let mesh = FALLBACK_QPN_BASE..FALLBACK_QPN_BASE + u32::from(self.ranks);
            if inc.shared && mesh.contains(&qpn) {
                return Err(ArgError::SharedQpnClash { qpn });
            }
        }
        for peer in 0..self.ranks {
            if peer != self.rank {
                self.mesh_qp(peer).validate().map_err(ArgError::Qp)?;
            }
        }
        Ok(())
    }

    /// The QP toward the first-hop switch, as a simulated cluster builds
    /// it: the group's start PSN both ways, the window's messages plus the
    /// control message, its echo and headroom in each queue. [HOST-002]
    pub(crate) fn inc_qp(&self, inc: &IncSetup) -> QpConfig {
        let path = PathConfig::new(self.mac, self.next_hop_mac, self.ip, inc.switch_ip);
        let mut qp = QpConfig::new(inc.qpn, inc.switch_qpn, path);
        self.qp_attributes(&mut qp);
        qp.transport = self.sr_timers(inc.transport, Some(inc.mode));
        qp.cc = inc.cc;
        qp.sq_psn = inc.start_psn;
        qp.rq_psn = inc.start_psn;
        let depth = u16::try_from(inc.window.saturating_add(4)).unwrap_or(u16::MAX);
        qp.sq_depth = depth;
        qp.rq_depth = depth;
        // Toward a Mode I switch the rank's receives are an edge's buffers
        // too: the switch's endpoint reads the credit and sends no result
        // or echo the rank has no receive posted for. [M1-013]
        qp.advertise_credits = inc.mode == Mode::Terminated;
        qp
    }

    /// The host driver's configuration. [HOST-002]
    pub(crate) fn host_config(&self, inc: &IncSetup) -> HostConfig {
        HostConfig {
            rank: self.rank,
            ranks: self.ranks,
            group: inc.group,
            qp: self.inc_qp(inc),
            message_packets: inc.message_packets,
            window: inc.window,
        }
    }

    /// The fallback mesh's QP toward `peer`: local QPN base + peer,
    /// remote QPN base + this rank, PSNs 0, frames to the next hop, which
    /// routes them by IP. [COMM-030]
    pub(crate) fn mesh_qp(&self, peer: u16) -> QpConfig {
        let peer_ip = self
            .rank_ips
            .get(usize::from(peer))
            .copied()
            .unwrap_or(Ipv4Addr::UNSPECIFIED);
        let path = PathConfig::new(self.mac, self.next_hop_mac, self.ip, peer_ip);
        let mut qp = QpConfig::new(mesh_qpn(peer), mesh_qpn(self.rank), path);
        self.qp_attributes(&mut qp);
        qp.transport = self.sr_timers(self.transport, None);
        let depth = self.fallback.window.saturating_add(4);
        qp.sq_depth = depth;
        qp.rq_depth = depth;
        qp
    }

    /// `t` with the SR timers this driver can keep, toward `mode` (`None`:
    /// the fallback mesh); go-back-N unchanged. [COMM-043]
    ///
    /// - Clock granularity, probe floor and timeout floor of at least
    ///   [`TIMER_TICK`]: the progress task's timer (tokio's) resolves no
    ///   finer, so a shorter timer fires a tick late anyway and its
    ///   estimate would understate the timeout ([CC-005]).
    /// - Mode II: probe and timeout floors of at least the QP timeout
    ///   (4.096 µs · 2^`qp_timeout`, within the cap). Its acknowledgements
    ///   come end to end, after the slowest rank's data was aggregated
    ///   ([COMM-014]), so a round trip measured while the ranks were in
    ///   step says nothing about the next call, whose last rank may start
    ///   milliseconds later: a timer or probe from that measurement
    ///   resends data that merely waits, and the switch resends complete
    ///   results to every rank. A hole a SACK reports is still resent at
    ///   once ([SR-015]); only a lost tail waits for the floor.
    pub(crate) fn sr_timers(&self, t: Transport, mode: Option<Mode>) -> Transport {
        let Transport::Sr(mut c) = t else {
            return t;
        };
        let rtt = &mut c.rtt;
        rtt.granularity = rtt.granularity.max(TIMER_TICK);
        rtt.min_pto = rtt.min_pto.max(TIMER_TICK).min(rtt.max_rto);
        rtt.min_rto = rtt.min_rto.max(TIMER_TICK).min(rtt.max_rto);
        let t = Transport::Sr(c);
        if mode == Some(Mode::Translated) {
            let fixed = ProtoDuration::from_nanos(4096)
                .saturating_mul(1u64 << u32::from(self.qp_timeout.min(40)));
            return t.with_timer_floor(fixed);
        }
        t
    }

    fn qp_attributes(&self, qp: &mut QpConfig) {
        qp.mtu = self.mtu;
        qp.timeout = self.qp_timeout;
        qp.retry_cnt = self.qp_retry_cnt;
        qp.rnr_retry = self.qp_rnr_retry;
    }
}

/// The resolution of the progress task's timer (tokio's): the floor of
/// every SR timer the communicator runs. [COMM-043]
pub(crate) const TIMER_TICK: ProtoDuration = ProtoDuration::from_millis(1);

/// The fallback QP number naming `rank`'s end. [COMM-030]
pub(crate) fn mesh_qpn(rank: u16) -> Qpn {
    Qpn::try_new(FALLBACK_QPN_BASE + u32::from(rank)).unwrap_or_default()
}

fn range(field: &'static str, value: u64, min: u64, max: u64) -> Result<(), ArgError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(ArgError::OutOfRange {
            field,
            value,
            min,
            max,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn cfg() -> CommConfig {
        let ips = (0..4).map(|r| Ipv4Addr::new(10, 0, 0, r)).collect();
        CommConfig::new(
            1,
            EthernetAddress([2, 0, 0, 0, 0, 1]),
            Ipv4Addr::new(10, 0, 0, 1),
            EthernetAddress([2, 0, 0, 1, 0, 0]),
            ips,
        )
    }

    /// [COMM-012] Every field is checked, with a typed reason.
    #[test]
    fn validation_names_each_problem() {
        assert_eq!(cfg().validate(), Ok(()));
        let mut c = cfg();
        c.ranks = 0;
        assert_eq!(c.validate(), Err(ArgError::ZeroRanks));
        let mut c = cfg();
        c.rank = 4;
        assert!(matches!(
            c.validate(),
            Err(ArgError::RankOutOfRange { rank: 4, ranks: 4 })
        ));
        let mut c = cfg();
        c.rank_ips.pop();
        c.ranks = 4;
        assert!(matches!(c.validate(), Err(ArgError::RankIps { .. })));
        let mut c = cfg();
        c.ip = Ipv4Addr::new(10, 0, 0, 9);
        assert_eq!(c.validate(), Err(ArgError::OwnIp { rank: 1 }));
        let mut c = cfg();
        c.rank_ips[3] = c.rank_ips[0];
        assert_eq!(c.validate(), Err(ArgError::DuplicateIp { a: 0, b: 3 }));
        let mut c = cfg();
        c.qp_timeout = 0;
        assert!(matches!(
            c.validate(),
            Err(ArgError::OutOfRange {
                field: "qp_timeout",
                ..
            })
        ));
        let mut c = cfg();
        c.fallback.message_bytes = 1001;
        assert!(matches!(c.validate(), Err(ArgError::OutOfRange { .. })));
        let mut c = cfg();
        c.call_timeout = Duration::ZERO;
        assert!(matches!(c.validate(), Err(ArgError::OutOfRange { .. })));
        let inc = inc_setup();
        assert_eq!(cfg().with_inc(inc).validate(), Ok(()));
        let mut c = cfg().with_inc(IncSetup { window: 0, ..inc });
        assert!(matches!(c.validate(), Err(ArgError::OutOfRange { .. })));
        c = CommConfig::new(
            0,
            c.mac,
            Ipv4Addr::new(10, 0, 0, 0),
            c.next_hop_mac,
            vec![Ipv4Addr::new(10, 0, 0, 0)],
        )
        .with_inc(inc);
        assert_eq!(c.validate(), Err(ArgError::IncNeedsTwoRanks));
    }

    /// A valid Mode II setup of rank QPN 0x101.
    fn inc_setup() -> IncSetup {
        IncSetup {
            mode: Mode::Translated,
            switch_ip: Ipv4Addr::new(10, 1, 0, 0),
            qpn: Qpn::try_new(0x101).unwrap(),
            switch_qpn: Qpn::try_new(0x1001).unwrap(),
            group: GroupId(7),
            start_psn: Psn::ZERO,
            message_packets: 4,
            window: 8,
            reproducible: false,
            shared: false,
            transport: Transport::Gbn,
            cc: None,
        }
    }

    /// [COMM-041] A shared group runs the mesh beside the switch QP, so
    /// the switch QP must not take a mesh QP number; an unshared group may.
    #[test]
    fn shared_group_keeps_the_mesh_qpns_free() {
        let inc = IncSetup {
            mode: Mode::Augmented,
            qpn: Qpn::try_new(FALLBACK_QPN_BASE + 3).unwrap(),
            ..inc_setup()
        };
        assert_eq!(cfg().with_inc(inc).validate(), Ok(()));
        let shared = IncSetup {
            shared: true,
            ..inc
        };
        assert_eq!(
            cfg().with_inc(shared).validate(),
            Err(ArgError::SharedQpnClash {
                qpn: FALLBACK_QPN_BASE + 3
            })
        );
        let clear = IncSetup {
            qpn: Qpn::try_new(FALLBACK_QPN_BASE + 4).unwrap(),
            ..shared
        };
        assert_eq!(cfg().with_inc(clear).validate(), Ok(()));
    }

    /// [COMM-030] The mesh's QP numbers pair up across ranks.
    #[test]
    fn mesh_qps_pair_up() {
        let c = cfg();
        let q = c.mesh_qp(3);
        assert_eq!(q.local_qpn.value(), 0x2003);
        assert_eq!(q.remote_qpn.value(), 0x2001);
        assert_eq!(q.path.remote_ip, Ipv4Addr::new(10, 0, 0, 3));
        assert_eq!(q.path.remote_mac, c.next_hop_mac);
    }

    /// [COMM-042] The QP toward the switch runs the setup's (granted)
    /// profile, the fallback mesh's QPs the configuration's; both default
    /// to go-back-N.
    #[test]
    fn qps_run_the_granted_transport() {
        let c = cfg().with_inc(inc_setup());
        assert_eq!(c.inc_qp(&inc_setup()).transport, Transport::Gbn);
        assert_eq!(c.mesh_qp(0).transport, Transport::Gbn);
        let sr = IncSetup {
            transport: Transport::SR,
            ..inc_setup()
        };
        let mut c = cfg().with_inc(sr);
        let rtt = |t: Transport| t.sr().map(|c| c.rtt);
        let toward_switch = rtt(c.inc_qp(&sr).transport).unwrap();
        assert_eq!(c.host_config(&sr).qp.transport, c.inc_qp(&sr).transport);
        assert_eq!(c.mesh_qp(0).transport, Transport::Gbn);
        c.transport = Transport::SR;
        let mesh = rtt(c.mesh_qp(2).transport).unwrap();
        assert_eq!(c.validate(), Ok(()));
        // [COMM-043] Timer floors: the task's tick everywhere, and in Mode
        // II (end-to-end acknowledgements) the QP timeout (2^14 · 4.096 µs).
        assert_eq!(
            (mesh.min_rto, mesh.min_pto, mesh.granularity),
            (TIMER_TICK, TIMER_TICK, TIMER_TICK)
        );
        let fixed = ProtoDuration::from_nanos(4096 << 14);
        assert_eq!(
            (toward_switch.min_rto, toward_switch.min_pto),
            (fixed, fixed)
        );
        let m3 = IncSetup {
            mode: Mode::Augmented,
            ..sr
        };
        let m3 = rtt(cfg().with_inc(m3).inc_qp(&m3).transport).unwrap();
        assert_eq!(m3.min_rto, TIMER_TICK);
        // The floors never pass the cap, whatever the exponent.
        let mut c = cfg().with_inc(sr);
        c.qp_timeout = 31;
        let capped = rtt(c.inc_qp(&sr).transport).unwrap();
        assert_eq!(capped.min_rto, capped.max_rto);
        assert_eq!(c.validate(), Ok(()));
    }
}
