//! Queue-pair attributes: what `ibv_modify_qp` sets on the way to RTS,
//! given all at once when an [`RcQp`](super::RcQp) is created. [RC-001]

use core::fmt;
use core::net::Ipv4Addr;

use crate::cc::{self, CnpPacer, DcqcnConfig, RttConfig};
use crate::psn::Psn;
use crate::time::Duration;
use crate::wire::{BthRepr, Dscp, Ecn, EthernetAddress, Qpn, VlanTag, RNR_TIMER_NS, SACK_MAX_PSNS};

/// Path MTU: payload bytes per packet, headers and ICRC excluded. The IB
/// enum values 1..=5. [RC-010] [IBTA 1.4 §9.7.7]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Mtu {
    /// 256 bytes (IB enum 1).
    Mtu256,
    /// 512 bytes (IB enum 2).
    Mtu512,
    /// 1024 bytes (IB enum 3).
    Mtu1024,
    /// 2048 bytes (IB enum 4).
    Mtu2048,
    /// 4096 bytes (IB enum 5).
    Mtu4096,
}

impl Mtu {
    /// All five MTUs, smallest first.
    pub const ALL: [Mtu; 5] = [
        Mtu::Mtu256,
        Mtu::Mtu512,
        Mtu::Mtu1024,
        Mtu::Mtu2048,
        Mtu::Mtu4096,
    ];

    /// Payload bytes per packet.
    pub const fn bytes(self) -> u32 {
        match self {
            Mtu::Mtu256 => 256,
            Mtu::Mtu512 => 512,
            Mtu::Mtu1024 => 1024,
            Mtu::Mtu2048 => 2048,
            Mtu::Mtu4096 => 4096,
        }
    }

    /// The MTU of exactly `bytes` payload bytes, if it is one of the five.
    pub const fn from_bytes(bytes: u32) -> Option<Mtu> {
        match bytes {
            256 => Some(Mtu::Mtu256),
            512 => Some(Mtu::Mtu512),
            1024 => Some(Mtu::Mtu1024),
            2048 => Some(Mtu::Mtu2048),
            4096 => Some(Mtu::Mtu4096),
            _ => None,
        }
    }

    /// The largest IB MTU that fits a link of `netdev_mtu` bytes, as rxe
    /// picks its port MTU (netdev MTU − 80, clamped to 256..=4096).
    pub const fn for_netdev(netdev_mtu: u32) -> Mtu {
        let room = netdev_mtu.saturating_sub(80);
        if room >= 4096 {
            Mtu::Mtu4096
        } else if room >= 2048 {
            Mtu::Mtu2048
        } else if room >= 1024 {
            Mtu::Mtu1024
        } else if room >= 512 {
            Mtu::Mtu512
        } else {
            Mtu::Mtu256
        }
    }
}

/// Where the QP's packets go: the address vector plus the IP/UDP fields a
/// RoCEv2 sender chooses. [RC-002]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PathConfig {
    /// Our MAC address (Ethernet source).
    pub local_mac: EthernetAddress,
    /// The next hop's MAC address (Ethernet destination).
    pub remote_mac: EthernetAddress,
    /// Our IPv4 address; frames to any other address are dropped.
    pub local_ip: Ipv4Addr,
    /// The peer's IPv4 address; frames from any other address are dropped.
    pub remote_ip: Ipv4Addr,
    /// 802.1Q tag to send with, if any.
    pub vlan: Option<VlanTag>,
    /// DSCP of sent packets.
    pub dscp: Dscp,
    /// ECN of sent packets (RoCEv2 senders use ECT(0) or ECT(1) with DCQCN).
    pub ecn: Ecn,
    /// IPv4 TTL of sent packets.
    pub ttl: u8,
    /// UDP source port; `None` derives it from the two QP numbers as rxe
    /// does (`rdma_get_udp_sport` with flow label 0). [RC-003]
    pub udp_src_port: Option<u16>,
}

impl PathConfig {
    /// A path between two addresses with rxe's defaults: no VLAN, DSCP 0,
    /// Not-ECT, TTL 64, derived UDP source port.
    pub fn new(
        local_mac: EthernetAddress,
        remote_mac: EthernetAddress,
        local_ip: Ipv4Addr,
        remote_ip: Ipv4Addr,
    ) -> PathConfig {
        PathConfig {
            local_mac,
            remote_mac,
            local_ip,
            remote_ip,
            vlan: None,
            dscp: Dscp::default(),
            ecn: Ecn::NotEct,
            ttl: 64,
            udp_src_port: None,
        }
    }
}

/// How an RC QP recovers from loss: its transport profile. [SR-010]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Transport {
    /// Linux rxe's go-back-N with the fixed local ACK timeout of [RC-040]:
    /// the profile of §10, byte for byte. The default, and the only one a
    /// verbs NIC speaks.
    #[default]
    Gbn,
    /// Selective retransmission ([EPIC App. C], SPEC §17.5): the responder
    /// keeps packets after a gap and answers with SACKs, the requester
    /// resends only what is missing, and its timers come from measured
    /// round trips. Only between two EPIC endpoints that both run it
    /// ([WIRE-052]).
    Sr(SrConfig),
}

impl Transport {
    /// Selective retransmission with [`SrConfig::DEFAULT`].
    pub const SR: Transport = Transport::Sr(SrConfig::DEFAULT);

    /// The SR parameters, when the profile is SR.
    pub const fn sr(&self) -> Option<&SrConfig> {
        match self {
            Transport::Gbn => None,
            Transport::Sr(c) => Some(c),
        }
    }

    /// The profile with its SR probe and retransmission floors raised to
    /// at least `floor` (within the estimator's cap): for a driver whose
    /// timers must outlast stalls or queues a round trip does not show
    /// ([SR-063], [COMM-043]). Go-back-N is returned unchanged.
    #[must_use]
    pub fn with_timer_floor(self, floor: Duration) -> Transport {
        match self {
            Transport::Gbn => Transport::Gbn,
            Transport::Sr(mut c) => {
                let floor = floor.min(c.rtt.max_rto);
                c.rtt.min_rto = c.rtt.min_rto.max(floor);
                c.rtt.min_pto = c.rtt.min_pto.max(floor);
                Transport::Sr(c)
            }
        }
    }
}

/// The parameters of the SR profile. [SR-010]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SrConfig {
    /// PSNs the responder keeps after its expected PSN (1..=1024): the
    /// receive window of [SR-001]. Its buffers take `window_psns` rounded
    /// up to a power of two, times MTU + 1 bytes, allocated when the QP is
    /// created. It should be at least the peer's `max_unacked_psns` + 1, so
    /// that nothing the peer may have in flight falls beyond it. [SR-011]
    pub window_psns: u32,
    /// The requester's round-trip estimator: retransmission and probe
    /// timeouts ([CC-001]…[CC-006]). [SR-016]
    pub rtt: RttConfig,
    /// At most this many PSNs sent after the newest one the peer is known
    /// to hold (acknowledged, or reported by a SACK); 0: no such limit
    /// (the default, byte for byte as before). A sender whose link has a
    /// deep egress FIFO otherwise fills it, and every resend waits behind
    /// it. Mode III hops honour it too. [SR-080] [SR-081]
    #[cfg_attr(feature = "serde", serde(default))]
    pub beyond_psns: u32,
}

impl SrConfig {
    /// A 256-PSN window (twice rxe's 128 unacknowledged PSNs) and
    /// [`RttConfig::DEFAULT`].
    pub const DEFAULT: SrConfig = SrConfig {
        window_psns: 256,
        rtt: RttConfig::DEFAULT,
        beyond_psns: 0,
    };
}

impl Default for SrConfig {
    fn default() -> Self {
        SrConfig::DEFAULT
    }
}

/// Attributes of one RC queue pair. Field names follow `ibv_qp_attr` where
/// one exists. [RC-001]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct QpConfig {
    /// Our QP number (the peer's BTH destination QP).
    pub local_qpn: Qpn,
    /// The peer's QP number (our BTH destination QP).
    pub remote_qpn: Qpn,
    /// Addresses and IP/UDP fields.
    pub path: PathConfig,
    /// Partition key sent; received keys must match in the low 15 bits.
    pub pkey: u16,
    /// Path MTU.
    pub mtu: Mtu,
    /// First PSN the requester sends (`sq_psn`).
    pub sq_psn: Psn,
    /// First PSN the responder expects (`rq_psn`).
    pub rq_psn: Psn,
    /// Local ACK timeout exponent: 4.096 µs · 2^timeout; 0 disables the
    /// retry timer (as in rxe). 0..=31. [RC-040]
    pub timeout: u8,
    /// Retries after a timeout or sequence NAK; 7 means unlimited (rxe).
    /// 0..=7. [RC-041]
    pub retry_cnt: u8,
    /// Retries after an RNR NAK; 7 means unlimited. 0..=7. [RC-045]
    pub rnr_retry: u8,
    /// Timer code this responder puts in its RNR NAKs. 0..=31. [RC-064]
    pub min_rnr_timer: u8,
    /// Send-queue depth: work requests posted and not yet returned by
    /// `poll_completion`.
    pub sq_depth: u16,
    /// Receive-queue depth, counted the same way.
    pub rq_depth: u16,
    /// Memory regions the responder can hold for RDMA WRITE.
    pub max_regions: u16,
    /// Responses (ACK/NAK) queued before newer ones overwrite the newest.
    pub response_depth: u16,
    /// Sending stalls while the next PSN is more than this many PSNs past
    /// the oldest unacknowledged one (rxe: 128). 1..=2^22. [RC-022]
    pub max_unacked_psns: u32,
    /// AckReq is set on an intermediate packet after more than this many
    /// packets without it (rxe: 64). [RC-021]
    pub ack_req_every: u32,
    /// Largest message accepted by `post_send`, in bytes (at most 2^31 and
    /// at most 2^22 packets).
    pub max_msg_bytes: u32,
    /// Go-back-N (default) or selective retransmission. [SR-010]
    /// Absent from a serialized configuration, it is go-back-N.
    #[cfg_attr(feature = "serde", serde(default))]
    pub transport: Transport,
    /// DCQCN congestion control (SPEC §17.9): `None` (the default) sends
    /// every frame exactly as without it; `Some` sends requests ECT(0),
    /// answers CE-marked requests with CNPs and paces the requester at the
    /// rate its CNPs leave it. [CC-110] Absent from a serialized
    /// configuration, it is off.
    #[cfg_attr(feature = "serde", serde(default))]
    pub cc: Option<CcConfig>,
    /// End-to-end credits ([IBTA 1.4 §9.7.7.2], SPEC §10.14): `false`
    /// (the default, as rxe) puts "unlimited" (0x1F) in every ACK; `true`
    /// puts the receives posted and not yet completed, and sends an
    /// unsolicited ACK when freed receives would otherwise go unseen.
    /// Mode I switch edges set it. The requester honours credits either
    /// way. [RC-100] Absent from a serialized configuration, it is off.
    #[cfg_attr(feature = "serde", serde(default))]
    pub advertise_credits: bool,
}

/// DCQCN on an RC QP: the reaction point's constants for the requester and
/// the CNP interval of the responder's notification point. [CC-110]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CcConfig {
    /// The requester's reaction point ([CC-025]; set `line_rate_bps` from
    /// the port; the default starts at 1/8 of it, [CC-117]).
    pub dcqcn: DcqcnConfig,
    /// The responder sends at most one CNP per this interval ([CC-040];
    /// default 50 µs, DCQCN's N; zero answers every CE-marked request).
    pub cnp_interval: Duration,
}

impl CcConfig {
    /// A QP's requester starts at 1/8 of the line rate rather than at it
    /// ([CC-117]): up to 8 senders that start together fit the line rate,
    /// and 16 fill a shallow queue at one line rate, slowly enough for its
    /// first marks to come back as CNPs before it overflows; a lone sender
    /// climbs back in DCQCN's fast recovery (12.5, 56, 78, 89, 95 Gbit/s
    /// of a 100 Gbit/s line, one step per increase period T).
    pub const START_DIVISOR: u32 = 8;

    /// [`DcqcnConfig::DEFAULT`] with the start of [`Self::START_DIVISOR`],
    /// and [`CnpPacer::DEFAULT_INTERVAL`].
    pub const DEFAULT: CcConfig = CcConfig::with_line_rate(DcqcnConfig::DEFAULT.line_rate_bps);

    /// The defaults at another line rate.
    pub const fn with_line_rate(line_rate_bps: u64) -> CcConfig {
        let mut dcqcn = DcqcnConfig::with_line_rate(line_rate_bps);
        dcqcn.start_divisor = CcConfig::START_DIVISOR;
        CcConfig {
            dcqcn,
            cnp_interval: CnpPacer::DEFAULT_INTERVAL,
        }
    }
}

impl Default for CcConfig {
    fn default() -> Self {
        CcConfig::DEFAULT
    }
}

impl QpConfig {
    /// A configuration with rxe's defaults: MTU 4096, timeout 14 (≈ 67 ms),
    /// retry_cnt 7, rnr_retry 7, min_rnr_timer 1 (10 µs), queues of 128,
    /// 128 unacknowledged PSNs, AckReq on every 66th packet at most.
    pub const fn new(local_qpn: Qpn, remote_qpn: Qpn, path: PathConfig) -> QpConfig {
        QpConfig {
            local_qpn,
            remote_qpn,
            path,
            pkey: BthRepr::DEFAULT_PKEY,
            mtu: Mtu::Mtu4096,
            sq_psn: Psn::ZERO,
            rq_psn: Psn::ZERO,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 1,
            sq_depth: 128,
            rq_depth: 128,
            max_regions: 4,
            response_depth: 8,
            max_unacked_psns: 128,
            ack_req_every: 64,
            max_msg_bytes: 1 << 31,
            transport: Transport::Gbn,
            cc: None,
            advertise_credits: false,
        }
    }

    /// Checks every attribute against its range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let max = |field, value: u64, max: u64| {
            if value > max {
                Err(ConfigError::OutOfRange { field, value, max })
            } else {
                Ok(())
            }
        };
        max("timeout", self.timeout.into(), 31)?;
        max("retry_cnt", self.retry_cnt.into(), 7)?;
        max("rnr_retry", self.rnr_retry.into(), 7)?;
        max("min_rnr_timer", self.min_rnr_timer.into(), 31)?;
        max("max_unacked_psns", self.max_unacked_psns.into(), 1 << 22)?;
        max("max_msg_bytes", self.max_msg_bytes.into(), 1 << 31)?;
        for (field, value) in [
            ("sq_depth", u32::from(self.sq_depth)),
            ("rq_depth", u32::from(self.rq_depth)),
            ("response_depth", u32::from(self.response_depth)),
            ("max_unacked_psns", self.max_unacked_psns),
        ] {
            if value == 0 {
                return Err(ConfigError::Zero { field });
            }
        }
        if let Transport::Sr(sr) = &self.transport {
            // A SACK reports 1024 PSNs after its cumulative point, which
            // may be U − 1: the whole window [U, U + max] must fit.
            // [SR-010]
            max(
                "max_unacked_psns",
                self.max_unacked_psns.into(),
                u64::from(SACK_MAX_PSNS - 1),
            )?;
            max("window_psns", sr.window_psns.into(), SACK_MAX_PSNS.into())?;
            if sr.window_psns == 0 {
                return Err(ConfigError::Zero {
                    field: "window_psns",
                });
            }
            sr.rtt.validate().map_err(ConfigError::Rtt)?;
        }
        if let Some(cc) = &self.cc {
            cc.dcqcn.validate().map_err(ConfigError::Dcqcn)?;
        }
        Ok(())
    }

    /// The local ACK timeout, 4.096 µs · 2^timeout, or `None` when the
    /// timer is disabled (timeout 0). [RC-040]
    pub fn ack_timeout(&self) -> Option<Duration> {
        match self.timeout {
            0 => None,
            t => Some(Duration::from_nanos(4096u64 << t.min(31))),
        }
    }

    /// The UDP source port of sent packets. [RC-003]
    pub fn udp_src_port(&self) -> u16 {
        self.path
            .udp_src_port
            .unwrap_or_else(|| rxe_udp_sport(self.local_qpn, self.remote_qpn))
    }
}

/// The wait an RNR NAK timer code asks for. [RC-046]
pub fn rnr_delay(code: u8) -> Duration {
    let ns = RNR_TIMER_NS
        .get(usize::from(code & 0x1f))
        .copied()
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

/// Linux's `rdma_get_udp_sport(0, lqpn, rqpn)`: a flow label from the two QP
/// numbers, folded into 0xC000..=0xFFFF. Symmetric in the two QPNs. [RC-003]
pub fn rxe_udp_sport(local: Qpn, remote: Qpn) -> u16 {
    let mut v = u64::from(local.value()) * u64::from(remote.value());
    v ^= v >> 20;
    v ^= v >> 40;
    let fl = (v & 0xf_ffff) as u32;
    let low = (fl & 0x3fff) ^ ((fl & 0xf_c000) >> 14);
    0xc000 | (low as u16)
}

/// A queue-pair attribute outside its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigError {
    /// The attribute exceeds its maximum.
    OutOfRange {
        /// Attribute name, as in [`QpConfig`].
        field: &'static str,
        /// The value given.
        value: u64,
        /// The largest value allowed.
        max: u64,
    },
    /// The attribute must not be zero.
    Zero {
        /// Attribute name, as in [`QpConfig`].
        field: &'static str,
    },
    /// The SR profile's round-trip estimator constants are inconsistent.
    Rtt(cc::ConfigError),
    /// The DCQCN constants of `cc` are inconsistent. [CC-025] [CC-110]
    Dcqcn(cc::ConfigError),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::OutOfRange { field, value, max } => {
                write!(
                    f,
                    "QP attribute {field} = {value} exceeds its maximum {max}"
                )
            }
            ConfigError::Zero { field } => write!(f, "QP attribute {field} must not be zero"),
            ConfigError::Rtt(e) => write!(f, "QP attribute transport: {e}"),
            ConfigError::Dcqcn(e) => write!(f, "QP attribute cc: {e}"),
        }
    }
}

impl core::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn qpn(v: u32) -> Qpn {
        Qpn::try_new(v).unwrap()
    }

    fn cfg() -> QpConfig {
        let path = PathConfig::new(
            EthernetAddress([2, 0, 0, 0, 0, 1]),
            EthernetAddress([2, 0, 0, 0, 0, 2]),
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
        );
        QpConfig::new(qpn(0x11), qpn(0x12), path)
    }

    #[test]
    fn timeout_formula_matches_rxe() {
        let mut c = cfg();
        c.timeout = 0;
        assert_eq!(c.ack_timeout(), None);
        c.timeout = 1;
        assert_eq!(c.ack_timeout(), Some(Duration::from_nanos(8192)));
        c.timeout = 14;
        assert_eq!(c.ack_timeout(), Some(Duration::from_nanos(4096 << 14)));
        c.timeout = 31;
        assert_eq!(c.ack_timeout(), Some(Duration::from_nanos(4096 << 31)));
    }

    #[test]
    fn validate_names_the_attribute() {
        let mut c = cfg();
        assert_eq!(c.validate(), Ok(()));
        c.retry_cnt = 8;
        assert_eq!(
            c.validate(),
            Err(ConfigError::OutOfRange {
                field: "retry_cnt",
                value: 8,
                max: 7
            })
        );
        let mut c = cfg();
        c.sq_depth = 0;
        assert_eq!(c.validate(), Err(ConfigError::Zero { field: "sq_depth" }));
    }

    #[test]
    fn udp_sport_is_symmetric_and_in_range() {
        for (a, b) in [(0x11, 0x12), (1, 0xff_ffff), (0x1234, 0x5678)] {
            let s = rxe_udp_sport(qpn(a), qpn(b));
            assert_eq!(s, rxe_udp_sport(qpn(b), qpn(a)));
            assert!(s >= 0xc000);
        }
        // 0x11 * 0x12 = 0x132: no high bits to fold.
        assert_eq!(rxe_udp_sport(qpn(0x11), qpn(0x12)), 0xc132);
    }

    #[test]
    fn mtu_for_netdev() {
        assert_eq!(Mtu::for_netdev(1500), Mtu::Mtu1024);
        assert_eq!(Mtu::for_netdev(9000), Mtu::Mtu4096);
        assert_eq!(Mtu::for_netdev(0), Mtu::Mtu256);
        for m in Mtu::ALL {
            assert_eq!(Mtu::from_bytes(m.bytes()), Some(m));
        }
    }
}
