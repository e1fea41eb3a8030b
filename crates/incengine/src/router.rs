//! The switch's router for everything that is not EPIC traffic for it
//! (frames the engine hands back as `Disposition::NotEpic`). Sans-IO like
//! the engine: a frame and its ingress port in, at most one frame out.
//! [SW-010]…[SW-015]
//!
//! - ARP requests for one of the switch's own addresses are answered on
//!   the port they came from. [SW-011]
//! - IPv4 unicast frames addressed to the switch's MAC and to another IP
//!   are forwarded by longest-prefix match over static routes: Ethernet
//!   source = the switch's MAC, destination = the route's next-hop MAC,
//!   TTL − 1, IPv4 header checksum recomputed. The RoCEv2 ICRC masks the
//!   TTL and the checksum, so routed RoCE frames stay valid. [SW-012]
//!   [SW-013]
//! - Everything else is dropped and counted by [`RouteDropReason`].
//!   [SW-014]
//!
//! No byte of a frame is read except through the `epic-proto` views and
//! [`ArpPacket`](crate::arp::ArpPacket), whose accessors are total: no
//! input panics the router. [SW-015]

use std::fmt;
use std::net::Ipv4Addr;

use epic_proto::wire::{ErrorKind, EtherType, EthernetAddress, EthernetFrame, Ipv4Packet};

use crate::arp::{ArpOperation, ArpRepr, ARP_LEN};
use crate::counters::Drops;

/// The shortest Ethernet frame without its FCS; ARP replies are padded to
/// it. [802.3]
pub const MIN_FRAME: usize = 60;

macro_rules! route_drop_reasons {
    ($( $(#[$doc:meta])* $name:ident => $label:literal, )*) => {
        /// Why the router dropped a frame. Every drop path bumps exactly
        /// one of these. [SW-014]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum RouteDropReason {
            $( $(#[$doc])* $name, )*
        }

        impl RouteDropReason {
            /// Every reason, in counter order.
            pub const ALL: &'static [RouteDropReason] = &[$(RouteDropReason::$name,)*];
            /// Number of reasons.
            pub const COUNT: usize = Self::ALL.len();

            /// A stable snake_case name for logs and tables.
            pub const fn label(self) -> &'static str {
                match self {
                    $(RouteDropReason::$name => $label,)*
                }
            }
        }
    };
}

route_drop_reasons! {
    /// Neither IPv4 nor ARP (IPv6, LLDP, …).
    NotIpv4 => "not_ipv4",
    /// A truncated Ethernet, IPv4 or ARP header, an IPv4 total length
    /// beyond the frame, or ARP for other than Ethernet/IPv4.
    Malformed => "malformed",
    /// IPv4 with options (IHL > 5): not forwarded.
    Ipv4Options => "ipv4_options",
    /// A wrong IPv4 header checksum.
    BadChecksum => "bad_checksum",
    /// A unicast frame for another MAC address (seen in promiscuous mode).
    OtherMac => "other_mac",
    /// IPv4 to a broadcast, multicast or unspecified address, or in a
    /// broadcast/multicast Ethernet frame: never forwarded.
    NotUnicast => "not_unicast",
    /// IPv4 to one of the switch's own addresses that the engine did not
    /// take (not RoCEv2, or addressed to a secondary address).
    ToSelfNotEpic => "to_self_not_epic",
    /// No route covers the destination.
    NoRoute => "no_route",
    /// TTL 0 or 1: forwarding would make it 0.
    TtlExpired => "ttl_expired",
    /// An ARP request for an address that is not the switch's.
    ArpNotOurs => "arp_not_ours",
    /// An ARP reply or other operation: the router answers, never learns.
    ArpNotRequest => "arp_not_request",
    /// The frame does not fit the output buffer.
    TooLong => "too_long",
}

impl fmt::Display for RouteDropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Counters of the router. [SW-014]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct RouterCounters {
    /// Frames handed to the router.
    pub rx_frames: u64,
    /// ARP replies sent.
    pub arp_replies: u64,
    /// IPv4 frames forwarded.
    pub forwarded: u64,
    drops: Drops<RouteDropReason>,
}

impl RouterCounters {
    /// Frames dropped for `reason`.
    pub fn drops(&self, reason: RouteDropReason) -> u64 {
        self.drops.get(reason)
    }

    /// Frames dropped for any reason.
    pub fn total_drops(&self) -> u64 {
        self.drops.total()
    }

    /// The drops by reason.
    pub fn drops_by_reason(&self) -> &Drops<RouteDropReason> {
        &self.drops
    }
}

/// A static route: IPv4 destinations under `prefix/prefix_len` leave on
/// `port` toward `next_hop_mac`. [SW-012]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Route {
    /// The network address (no bits set beyond `prefix_len`).
    pub prefix: Ipv4Addr,
    /// Leading bits that must match, 0 to 32.
    pub prefix_len: u8,
    /// The egress port.
    pub port: u16,
    /// The next hop's MAC: the rewritten Ethernet destination.
    pub next_hop_mac: EthernetAddress,
}

impl Route {
    /// The netmask of `prefix_len` bits (`None` beyond 32).
    pub fn mask(prefix_len: u8) -> Option<u32> {
        match prefix_len {
            0 => Some(0),
            1..=32 => Some(u32::MAX << (32 - u32::from(prefix_len))),
            _ => None,
        }
    }

    /// Whether `addr` is under this route's prefix.
    pub fn covers(&self, addr: Ipv4Addr) -> bool {
        Route::mask(self.prefix_len).is_some_and(|m| u32::from(addr) & m == u32::from(self.prefix))
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} via port {} to {}",
            self.prefix, self.prefix_len, self.port, self.next_hop_mac
        )
    }
}

/// A route the router cannot hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// A prefix length beyond 32.
    #[error("route {index}: prefix length {prefix_len} is beyond 32")]
    PrefixLen {
        /// Position in the route list.
        index: usize,
        /// The length given.
        prefix_len: u8,
    },
    /// Address bits set beyond the prefix length (10.0.0.1/24).
    #[error("route {index}: {prefix}/{prefix_len} has bits set beyond the prefix length")]
    HostBits {
        /// Position in the route list.
        index: usize,
        /// The prefix given.
        prefix: Ipv4Addr,
        /// Its length.
        prefix_len: u8,
    },
}

/// The router of one switch. [SW-010]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Router {
    mac: EthernetAddress,
    addresses: Vec<Ipv4Addr>,
    /// Longest prefix first; equal lengths keep their configured order.
    routes: Vec<Route>,
    counters: RouterCounters,
}

impl Router {
    /// A router at `mac` answering ARP for `addresses`, forwarding by
    /// `routes`. Refuses prefixes longer than 32 bits or with host bits.
    pub fn new(
        mac: EthernetAddress,
        addresses: &[Ipv4Addr],
        routes: &[Route],
    ) -> Result<Router, RouteError> {
        for (index, r) in routes.iter().enumerate() {
            let Some(mask) = Route::mask(r.prefix_len) else {
                return Err(RouteError::PrefixLen {
                    index,
                    prefix_len: r.prefix_len,
                });
            };
            if u32::from(r.prefix) & !mask != 0 {
                return Err(RouteError::HostBits {
                    index,
                    prefix: r.prefix,
                    prefix_len: r.prefix_len,
                });
            }
        }
        let mut sorted = routes.to_vec();
        // Stable: among equal lengths the first configured wins.
        sorted.sort_by_key(|r| std::cmp::Reverse(r.prefix_len));
        let mut addrs = addresses.to_vec();
        addrs.dedup();
        Ok(Router {
            mac,
            addresses: addrs,
            routes: sorted,
            counters: RouterCounters::default(),
        })
    }

    /// The counters.
    pub fn counters(&self) -> &RouterCounters {
        &self.counters
    }

    /// The routes, longest prefix first.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The addresses the router answers ARP for.
    pub fn addresses(&self) -> &[Ipv4Addr] {
        &self.addresses
    }

    /// The route for `dst`: the longest prefix that covers it. [SW-012]
    pub fn lookup(&self, dst: Ipv4Addr) -> Option<&Route> {
        self.routes.iter().find(|r| r.covers(dst))
    }

    /// Handles one frame that arrived on `port`: writes the frame to
    /// send (an ARP reply or the forwarded frame) into `out`, or counts
    /// the drop. [SW-010]
    pub fn handle_frame(&mut self, port: u16, frame: &[u8], out: &mut [u8]) -> RouteOutcome {
        self.counters.rx_frames += 1;
        let outcome = self.route(port, frame, out);
        match outcome {
            RouteOutcome::ArpReply { .. } => self.counters.arp_replies += 1,
            RouteOutcome::Forwarded { .. } => self.counters.forwarded += 1,
            RouteOutcome::Dropped(reason) => self.counters.drops.add(reason),
        }
        outcome
    }

    fn route(&self, port: u16, frame: &[u8], out: &mut [u8]) -> RouteOutcome {
        let eth = match EthernetFrame::new_checked(frame) {
            Ok(eth) => eth,
            Err(_) => return RouteOutcome::Dropped(RouteDropReason::Malformed),
        };
        let sent = match eth.ethertype() {
            EtherType::Arp => self
                .arp(&eth, frame, out)
                .map(|len| RouteOutcome::ArpReply { port, len }),
            EtherType::Ipv4 => self
                .forward(&eth, frame, out)
                .map(|(port, len)| RouteOutcome::Forwarded { port, len }),
            _ => Err(RouteDropReason::NotIpv4),
        };
        sent.unwrap_or_else(RouteOutcome::Dropped)
    }

    /// Answers an ARP request for one of our addresses. [SW-011]
    fn arp(
        &self,
        eth: &EthernetFrame<&[u8]>,
        frame: &[u8],
        out: &mut [u8],
    ) -> Result<usize, RouteDropReason> {
        let dst = eth.dst_addr();
        if dst != EthernetAddress::BROADCAST && dst != self.mac {
            return Err(RouteDropReason::OtherMac);
        }
        let req = ArpRepr::parse(eth.payload()).map_err(|_| RouteDropReason::Malformed)?;
        if req.operation != ArpOperation::Request {
            return Err(RouteDropReason::ArpNotRequest);
        }
        if !self.addresses.contains(&req.target_ip) {
            return Err(RouteDropReason::ArpNotOurs);
        }
        let hdr = eth.header_len();
        let len = (hdr + ARP_LEN).max(MIN_FRAME);
        let buf = out.get_mut(..len).ok_or(RouteDropReason::TooLong)?;
        buf.fill(0);
        // The request's Ethernet header (and 802.1Q tag, if any), turned
        // around.
        let head = frame.get(..hdr).ok_or(RouteDropReason::Malformed)?;
        buf.get_mut(..hdr)
            .ok_or(RouteDropReason::TooLong)?
            .copy_from_slice(head);
        let mut reply_eth = EthernetFrame::new_unchecked(&mut *buf);
        reply_eth.set_dst_addr(eth.src_addr());
        reply_eth.set_src_addr(self.mac);
        let reply = ArpRepr {
            operation: ArpOperation::Reply,
            sender_mac: self.mac,
            sender_ip: req.target_ip,
            target_mac: req.sender_mac,
            target_ip: req.sender_ip,
        };
        reply
            .emit(buf.get_mut(hdr..).unwrap_or_default())
            .ok_or(RouteDropReason::TooLong)?;
        Ok(len)
    }

    /// Forwards an IPv4 unicast frame by its route. [SW-012] [SW-013]
    fn forward(
        &self,
        eth: &EthernetFrame<&[u8]>,
        frame: &[u8],
        out: &mut [u8],
    ) -> Result<(u16, usize), RouteDropReason> {
        let dst_mac = eth.dst_addr();
        if dst_mac.0.first().is_some_and(|b| b & 1 == 1) {
            return Err(RouteDropReason::NotUnicast);
        }
        if dst_mac != self.mac {
            return Err(RouteDropReason::OtherMac);
        }
        let hdr = eth.header_len();
        let ip = Ipv4Packet::new_checked(eth.payload()).map_err(|e| match e.kind {
            ErrorKind::Ipv4Options { .. } => RouteDropReason::Ipv4Options,
            _ => RouteDropReason::Malformed,
        })?;
        if !ip.verify_checksum() {
            return Err(RouteDropReason::BadChecksum);
        }
        let dst = ip.dst_addr();
        if self.addresses.contains(&dst) {
            return Err(RouteDropReason::ToSelfNotEpic);
        }
        if dst.is_broadcast() || dst.is_multicast() || dst.is_unspecified() {
            return Err(RouteDropReason::NotUnicast);
        }
        let route = self.lookup(dst).ok_or(RouteDropReason::NoRoute)?;
        if ip.ttl() <= 1 {
            return Err(RouteDropReason::TtlExpired);
        }
        let ttl = ip.ttl() - 1;
        let len = frame.len();
        let buf = out.get_mut(..len).ok_or(RouteDropReason::TooLong)?;
        buf.copy_from_slice(frame);
        let mut out_eth = EthernetFrame::new_unchecked(&mut *buf);
        out_eth.set_src_addr(self.mac);
        out_eth.set_dst_addr(route.next_hop_mac);
        let mut out_ip = Ipv4Packet::new_unchecked(buf.get_mut(hdr..).unwrap_or_default());
        out_ip.set_ttl(ttl);
        out_ip.fill_checksum();
        Ok((route.port, len))
    }
}

/// What became of a frame given to [`Router::handle_frame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteOutcome {
    /// An ARP reply of `len` bytes in the output buffer, for `port` (the
    /// request's ingress port). [SW-011]
    ArpReply {
        /// Egress port.
        port: u16,
        /// Frame length.
        len: usize,
    },
    /// The frame, rewritten, `len` bytes in the output buffer, for the
    /// route's `port`. [SW-012]
    Forwarded {
        /// Egress port.
        port: u16,
        /// Frame length.
        len: usize,
    },
    /// Dropped and counted. [SW-014]
    Dropped(RouteDropReason),
}

impl RouteOutcome {
    /// The port and length of the frame to send, if any.
    pub fn transmit(self) -> Option<(u16, usize)> {
        match self {
            RouteOutcome::ArpReply { port, len } | RouteOutcome::Forwarded { port, len } => {
                Some((port, len))
            }
            RouteOutcome::Dropped(_) => None,
        }
    }
}
