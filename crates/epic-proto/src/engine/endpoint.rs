//! The EndPoint of §4.1: one tree edge's configuration, receive state and
//! send state. [ENG-011]

use super::config::EndpointConfig;
use crate::psn::Psn;
use crate::wire::{
    AckFrameRepr, AckTemplate, DataTemplate, EthernetAddress, Qpn, RoceFrameRepr, Syndrome,
};
use core::net::Ipv4Addr;

/// An ACK or NAK waiting to go out on an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Response {
    pub(crate) syndrome: Syndrome,
    pub(crate) psn: Psn,
    pub(crate) msn: u32,
}

impl Response {
    /// The last PSN this response acknowledges, cumulatively: the PSN of an
    /// ACK, one before the PSN of a NAK.
    pub(crate) fn acked_through(&self) -> Psn {
        if self.syndrome.is_ack() {
            self.psn
        } else {
            self.psn.sub(1)
        }
    }
}

/// One edge as every mode sees it: its configuration and the response
/// waiting to go out on it. Each mode keeps the rest of an edge's state
/// itself: Mode I an RC endpoint, Mode II the Up pipe's arrival bits,
/// Mode III a hop's receive and send state. [ENG-011]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EndpointState {
    /// Configuration.
    pub cfg: EndpointConfig,
    /// The ACK/NAK to send next, coalesced. [ENG-021]
    pub(crate) response: Option<Response>,
    /// Whether the endpoint sits in the engine's response/data work lists.
    pub(crate) listed: bool,
    /// Its ACK frame, built at the first ACK and rebuilt when `cfg` no
    /// longer fits it. [WIRE-066]
    pub(crate) ack_template: AckCache,
    /// Its data frames' headers, built at the first data packet and
    /// rebuilt when `cfg` or the payload length no longer fits them.
    /// [WIRE-066]
    pub(crate) data_template: DataCache,
}

/// The endpoint's [`AckTemplate`]: a cache of what `cfg` determines, so
/// it plays no part in comparing or hashing states (two states that
/// differ only in it behave the same).
#[derive(Debug, Clone, Default)]
pub(crate) struct AckCache(Option<(AckKey, AckTemplate)>);

/// What an endpoint's ACK frame is built from, besides the identification,
/// the PSN and the AETH: the switch's MAC and IPv4 address and the
/// endpoint's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AckKey {
    src_mac: EthernetAddress,
    src_ip: Ipv4Addr,
    remote_mac: EthernetAddress,
    remote_ip: Ipv4Addr,
    local_qpn: Qpn,
    remote_qpn: Qpn,
}

impl AckKey {
    fn of(src_mac: EthernetAddress, src_ip: Ipv4Addr, ep: &EndpointConfig) -> AckKey {
        AckKey {
            src_mac,
            src_ip,
            remote_mac: ep.remote_mac,
            remote_ip: ep.remote_ip,
            local_qpn: ep.local_qpn,
            remote_qpn: ep.remote_qpn,
        }
    }
}

impl AckCache {
    /// The template for ACKs from `src_mac`/`src_ip` toward `ep`, built
    /// from `frame` (an ACK of theirs) unless the one kept is theirs.
    pub(crate) fn template(
        &mut self,
        src_mac: EthernetAddress,
        src_ip: Ipv4Addr,
        ep: &EndpointConfig,
        frame: impl FnOnce() -> AckFrameRepr,
    ) -> Option<&AckTemplate> {
        let key = AckKey::of(src_mac, src_ip, ep);
        if !self.0.as_ref().is_some_and(|(k, _)| *k == key) {
            self.0 = AckTemplate::new(&frame()).ok().map(|t| (key, t));
        }
        self.0.as_ref().map(|(_, t)| t)
    }
}

impl PartialEq for AckCache {
    fn eq(&self, _: &AckCache) -> bool {
        true
    }
}

impl Eq for AckCache {}

impl core::hash::Hash for AckCache {
    fn hash<H: core::hash::Hasher>(&self, _: &mut H) {}
}

/// The endpoint's [`DataTemplate`] for one payload length, or the
/// knowledge that its frames of that length have none (a pad): a cache of
/// what `cfg` determines, so it plays no part in comparing or hashing
/// states.
#[derive(Debug, Clone, Default)]
pub(crate) struct DataCache(Option<(DataKey, Option<DataTemplate>)>);

/// What an endpoint's data frames are built from, besides the fields a
/// [`DataTemplate`] leaves open: the switch's addresses, the endpoint's
/// configuration and the payload length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DataKey {
    ack: AckKey,
    payload_len: usize,
}

impl DataCache {
    /// The template for `payload_len`-byte data frames from
    /// `src_mac`/`src_ip` toward `ep`, built from `frame` (one of them)
    /// unless the one kept is theirs; `None` when such frames have none.
    pub(crate) fn template(
        &mut self,
        src_mac: EthernetAddress,
        src_ip: Ipv4Addr,
        ep: &EndpointConfig,
        payload_len: usize,
        frame: impl FnOnce() -> RoceFrameRepr,
    ) -> Option<&DataTemplate> {
        let key = DataKey {
            ack: AckKey::of(src_mac, src_ip, ep),
            payload_len,
        };
        if !self.0.as_ref().is_some_and(|(k, _)| *k == key) {
            self.0 = Some((key, DataTemplate::new(&frame(), payload_len)));
        }
        self.0.as_ref().and_then(|(_, t)| t.as_ref())
    }
}

impl PartialEq for DataCache {
    fn eq(&self, _: &DataCache) -> bool {
        true
    }
}

impl Eq for DataCache {}

impl core::hash::Hash for DataCache {
    fn hash<H: core::hash::Hasher>(&self, _: &mut H) {}
}

impl EndpointState {
    pub(crate) fn new(cfg: EndpointConfig) -> EndpointState {
        EndpointState {
            cfg,
            response: None,
            listed: false,
            ack_template: AckCache::default(),
            data_template: DataCache::default(),
        }
    }

    /// Queues `r`, coalescing with a response not yet sent: cumulative
    /// progress never goes backwards, and a NAK survives an ACK that does
    /// not cover its PSN. [ENG-021]
    pub(crate) fn queue_response(&mut self, r: Response) {
        let keep_old = match self.response {
            None => false,
            Some(old) => {
                let new_through = r.acked_through();
                let old_through = old.acked_through();
                if r.syndrome.is_ack() {
                    // An ACK replaces anything it does not fall behind.
                    if old.syndrome.is_ack() {
                        !new_through.is_after(old_through)
                    } else {
                        new_through.is_before(old.psn)
                    }
                } else {
                    // A NAK replaces anything that acknowledges less.
                    new_through.is_before(old_through)
                }
            }
        };
        if !keep_old {
            self.response = Some(r);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::engine::config::Peer;
    use crate::wire::{EthernetAddress, NakCode, Qpn};
    use core::net::Ipv4Addr;

    fn ep() -> EndpointState {
        EndpointState::new(EndpointConfig {
            port: 0,
            local_qpn: Qpn::try_new(0x10).unwrap(),
            remote_qpn: Qpn::try_new(0x20).unwrap(),
            remote_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
            remote_ip: Ipv4Addr::new(10, 0, 0, 1),
            peer: Peer::Rank(0),
        })
    }

    fn ack(p: u32) -> Response {
        Response {
            syndrome: Syndrome::ACK,
            psn: Psn::from_truncated(p),
            msn: 0,
        }
    }

    fn nak(p: u32) -> Response {
        Response {
            syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
            psn: Psn::from_truncated(p),
            msn: 0,
        }
    }

    /// [ENG-021] Coalescing keeps the most informative response.
    #[test]
    fn responses_coalesce_by_progress() {
        let mut e = ep();
        e.queue_response(ack(5));
        e.queue_response(ack(3));
        assert_eq!(e.response, Some(ack(5)));
        e.queue_response(nak(9));
        assert_eq!(e.response, Some(nak(9)));
        // An ACK short of the NAK's PSN does not hide the NAK.
        e.queue_response(ack(7));
        assert_eq!(e.response, Some(nak(9)));
        // An ACK that covers it does.
        e.queue_response(ack(9));
        assert_eq!(e.response, Some(ack(9)));
        // An older NAK never replaces a newer ACK.
        e.queue_response(nak(4));
        assert_eq!(e.response, Some(ack(9)));
    }
}
