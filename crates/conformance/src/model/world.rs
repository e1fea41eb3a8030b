//! The model's state: the real machines of a tree and the frames on its
//! links, and the steps that move it (deliver, drop, duplicate, fire a
//! timer). [VER-001]
//!
//! Time is logical: delivering a frame takes none, and firing a timer
//! moves the clock to that timer's deadline. A machine is shared between
//! the states that did not change it (`Arc`), and carries the hash of its
//! state from the step that last changed it, so a step clones and hashes
//! one machine, not the tree.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use epic_proto::engine::IncEngine;
use epic_proto::ghost::Ghost;
use epic_proto::host::{HostEvent, HostRank};
use epic_proto::time::Instant;

/// A port of a machine of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Port {
    /// The machine: switches first (breadth-first), then ranks.
    pub node: u16,
    /// Its port.
    pub port: u16,
}

/// A frame on the link toward `to`.
#[derive(Debug, Clone)]
pub struct Flight {
    /// Where it arrives.
    pub to: Port,
    /// Its bytes, as the sender wrote them.
    pub frame: Arc<[u8]>,
    /// The hash of `to` and the frame's meaning, computed once.
    hash: u64,
}

impl Flight {
    /// A frame on its way to `to`.
    pub fn new(to: Port, frame: Arc<[u8]>) -> Flight {
        let hash = hash_of(&(to, meaning(&frame)));
        Flight { to, frame, hash }
    }
}

/// Ethernet + IPv4 header bytes before the UDP header, and where the IPv4
/// identification and header checksum sit in a frame.
const IPV4_IDENT: core::ops::Range<usize> = 18..20;
const IPV4_CHECKSUM: core::ops::Range<usize> = 24..26;
const ICRC_LEN: usize = 4;

/// The bytes of a frame that say what it means: all but the IPv4
/// identification, the IPv4 header checksum and the ICRC, which a sender
/// stamps from its ghost counter or computes from the rest. Two frames
/// equal here make every receiver do the same (the receiver checks the
/// ICRC and checksum of the real bytes, then forgets them). [VER-002]
pub(super) fn meaning(frame: &[u8]) -> [&[u8]; 3] {
    let is_ipv4 = frame.get(12..14) == Some(&[0x08, 0x00][..]);
    if !is_ipv4 || frame.len() < IPV4_CHECKSUM.end + ICRC_LEN {
        return [frame, &[], &[]];
    }
    let end = frame.len() - ICRC_LEN;
    [
        frame.get(..IPV4_IDENT.start).unwrap_or(&[]),
        frame
            .get(IPV4_IDENT.end..IPV4_CHECKSUM.start)
            .unwrap_or(&[]),
        frame.get(IPV4_CHECKSUM.end..end).unwrap_or(&[]),
    ]
}

impl Flight {
    /// The hash of where it arrives and what it means (the same for equal
    /// frames in flight).
    pub fn key(&self) -> u64 {
        self.hash
    }
}

impl PartialEq for Flight {
    fn eq(&self, other: &Flight) -> bool {
        self.hash == other.hash
            && self.to == other.to
            && meaning(&self.frame) == meaning(&other.frame)
    }
}

impl Eq for Flight {}

impl PartialOrd for Flight {
    fn partial_cmp(&self, other: &Flight) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Flight {
    fn cmp(&self, other: &Flight) -> Ordering {
        self.to
            .cmp(&other.to)
            .then_with(|| meaning(&self.frame).cmp(&meaning(&other.frame)))
    }
}

impl Hash for Flight {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.hash.hash(h);
    }
}

/// A rank's host: its driver and how its call ended.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rank {
    /// The driver that ships.
    pub host: HostRank,
    /// The call's end, once reported.
    pub outcome: Option<HostEvent>,
    /// Calls before this one that completed exactly. [VER-011]
    pub finished: u8,
}

/// A machine of the tree (held behind an `Arc`, so the size difference
/// costs nothing).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[allow(clippy::large_enum_variant)]
pub enum Machine {
    /// A switch running the IncEngine that ships.
    Switch(IncEngine),
    /// A rank.
    Rank(Rank),
}

impl Machine {
    fn handle_frame(&mut self, now: Instant, port: u16, frame: &[u8]) {
        match self {
            Machine::Switch(e) => {
                let _ = e.handle_frame(now, port, frame);
            }
            Machine::Rank(r) => {
                r.host.handle_frame(now, frame);
                r.collect();
            }
        }
    }

    /// Everything the machine has to send, with the port it leaves by.
    fn drain(&mut self, now: Instant, buf: &mut [u8], out: &mut Vec<(u16, Vec<u8>)>) {
        match self {
            Machine::Switch(e) => {
                while let Some(t) = e.poll_transmit(now, buf) {
                    out.push((t.port, buf.get(..t.len).unwrap_or(&[]).to_vec()));
                }
            }
            Machine::Rank(r) => {
                while let Some(n) = r.host.poll_transmit(now, buf) {
                    out.push((0, buf.get(..n).unwrap_or(&[]).to_vec()));
                }
                r.collect();
            }
        }
    }

    /// The deadline of its earliest timer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Machine::Switch(e) => e.poll_timeout(),
            Machine::Rank(r) => r.host.poll_timeout(),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self {
            Machine::Switch(e) => e.handle_timeout(now),
            Machine::Rank(r) => {
                r.host.handle_timeout(now);
                r.collect();
            }
        }
    }
}

impl Rank {
    fn collect(&mut self) {
        if let Some(ev) = self.host.poll_event() {
            self.outcome = Some(ev);
        }
    }
}

/// A machine, shared until a step changes it, and the hash of its state.
#[derive(Debug, Clone)]
pub struct Held {
    machine: Arc<Machine>,
    hash: u64,
}

impl Held {
    /// Holds `machine`, hashing it once.
    pub fn new(machine: Machine) -> Held {
        let hash = hash_of(&machine);
        Held {
            machine: Arc::new(machine),
            hash,
        }
    }

    /// The machine.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The hash of the machine's state (what the state's equality
    /// compares).
    pub fn state_hash(&self) -> u64 {
        self.hash
    }
}

/// The hash of a machine's state: aHash with fixed seeds (the same in
/// every run, so searches are reproducible), several times faster than
/// SipHash on the many small writes a derived `Hash` makes.
pub(super) fn hash_of<T: Hash>(v: &T) -> u64 {
    const SEEDS: [u64; 4] = [
        0x6570_6963_2d6d_6f64,
        0x656c_2d63_6865_636b,
        0x9e37_79b9_7f4a_7c15,
        0xc2b2_ae3d_27d4_eb4f,
    ];
    ahash::RandomState::with_seeds(SEEDS[0], SEEDS[1], SEEDS[2], SEEDS[3]).hash_one(v)
}

/// What the search has seen happen on the path to a state: ghosts, for
/// the "sometimes" properties only (a witness proves a path exists).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reached {
    /// A frame was dropped.
    pub dropped: bool,
    /// A frame was duplicated.
    pub duplicated: bool,
    /// A timer fired.
    pub fired: bool,
    /// A frame was delivered ahead of one sent before it on its link.
    pub reordered: bool,
    /// A frame from outside the group was sent.
    pub forged: bool,
}

/// One state of the model. [VER-001]
///
/// Equality and hashing see the machines' states (through their cached
/// hashes), the frames in flight as a multiset (or FIFO per link without
/// reordering), the logical clock and the fault budget spent; ghosts and
/// the paths' history stay out.
#[derive(Debug, Clone)]
pub struct World {
    /// Switches (breadth-first), then ranks.
    pub nodes: Vec<Held>,
    /// Frames in flight, in canonical order: by destination port, then
    /// (with reordering) by meaning; without reordering, per port in
    /// sending order.
    pub flights: Vec<Flight>,
    /// The logical clock.
    pub now: Instant,
    /// Frames dropped so far.
    pub drops: u8,
    /// Frames duplicated so far.
    pub dups: u8,
    /// Timers fired so far.
    pub fires: u16,
    /// Frames from outside the group sent so far.
    pub forged: u8,
    /// What happened on the way (ghost).
    pub reached: Ghost<Reached>,
}

impl PartialEq for World {
    fn eq(&self, other: &World) -> bool {
        self.nodes.len() == other.nodes.len()
            && self
                .nodes
                .iter()
                .zip(&other.nodes)
                .all(|(a, b)| a.hash == b.hash)
            && self.flights == other.flights
            && self.now == other.now
            && self.drops == other.drops
            && self.dups == other.dups
            && self.fires == other.fires
            && self.forged == other.forged
    }
}

impl Eq for World {}

impl World {
    /// The state's 64-bit fingerprint (what the visited set keeps).
    pub fn fingerprint(&self) -> u64 {
        hash_of(self)
    }
}

impl Hash for World {
    fn hash<H: Hasher>(&self, h: &mut H) {
        for n in &self.nodes {
            n.hash.hash(h);
        }
        self.flights.hash(h);
        self.now.hash(h);
        self.drops.hash(h);
        self.dups.hash(h);
        self.fires.hash(h);
        self.forged.hash(h);
    }
}

/// The wiring: the port at the other end of each machine's ports.
#[derive(Debug, Clone, Default)]
pub struct Wiring {
    /// `peers[node][port]`.
    pub peers: Vec<Vec<Option<Port>>>,
}

impl Wiring {
    /// The port at the other end of `node`'s `port`, if it has a link.
    pub fn peer(&self, node: usize, port: u16) -> Option<Port> {
        *self.peers.get(node)?.get(usize::from(port))?
    }
}

/// Largest frame a machine writes.
pub const FRAME_BUF: usize = 9216;

thread_local! {
    /// The buffer machines write their frames into, one per search thread.
    static FRAME: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; FRAME_BUF]);
}

impl World {
    /// The machine of node `n`.
    pub fn machine(&self, n: usize) -> Option<&Machine> {
        self.nodes.get(n).map(Held::machine)
    }

    /// Whether flight `i` is the first on its link (flights are grouped
    /// by receiving port; without reordering each group is in sending
    /// order, so this is the link's head).
    pub fn is_head(&self, i: usize) -> bool {
        let to = self.flights.get(i).map(|f| f.to);
        to.is_some() && (i == 0 || self.flights.get(i - 1).map(|f| f.to) != to)
    }

    /// The ranks, in rank order.
    pub fn ranks(&self) -> impl Iterator<Item = &Rank> + '_ {
        self.nodes.iter().filter_map(|n| match n.machine() {
            Machine::Rank(r) => Some(r),
            Machine::Switch(_) => None,
        })
    }

    /// The switches, breadth-first.
    pub fn switches(&self) -> impl Iterator<Item = &IncEngine> + '_ {
        self.nodes.iter().filter_map(|n| match n.machine() {
            Machine::Switch(e) => Some(e),
            Machine::Rank(_) => None,
        })
    }

    /// Every rank's call has ended.
    pub fn all_done(&self) -> bool {
        self.ranks().all(|r| r.outcome.is_some())
    }

    /// Runs `step` on node `n` (cloning it if another state shares it),
    /// then sends what it has to send and rehashes it.
    pub fn on_node(&mut self, wiring: &Wiring, n: usize, step: impl FnOnce(&mut Machine, Instant)) {
        let now = self.now;
        let mut out = Vec::new();
        if let Some(h) = self.nodes.get_mut(n) {
            let m = Arc::make_mut(&mut h.machine);
            step(m, now);
            FRAME.with_borrow_mut(|buf| m.drain(now, buf, &mut out));
            h.hash = hash_of(&*h.machine);
        }
        for (port, frame) in out {
            // A port without a link: the frame goes nowhere, as on a
            // switch port with no cable.
            if let Some(to) = wiring.peer(n, port) {
                self.flights.push(Flight::new(to, frame.into()));
            }
        }
    }

    /// Delivers flight `i`.
    pub fn deliver(&mut self, wiring: &Wiring, i: usize) {
        if i >= self.flights.len() {
            return;
        }
        let f = self.flights.remove(i);
        if self
            .flights
            .get(..i)
            .unwrap_or(&[])
            .iter()
            .any(|g| g.to == f.to)
        {
            self.reached.reordered = true;
        }
        self.on_node(wiring, usize::from(f.to.node), |m, now| {
            m.handle_frame(now, f.to.port, &f.frame)
        });
    }

    /// Drops flight `i`.
    pub fn drop_flight(&mut self, i: usize) {
        if i < self.flights.len() {
            self.flights.remove(i);
            self.drops = self.drops.saturating_add(1);
            self.reached.dropped = true;
        }
    }

    /// Sends a forged copy of flight `i` ([`super::forge::forge`]) to the
    /// same port, ahead of it on its link; false (nothing changed) if flight `i` is not a data
    /// packet. [VER-010]
    pub fn forge(&mut self, i: usize) -> bool {
        let Some(f) = self.flights.get(i) else {
            return false;
        };
        let Some(frame) = super::forge::forge(&f.frame) else {
            return false;
        };
        let to = f.to;
        self.flights.insert(i, Flight::new(to, frame.into()));
        self.forged = self.forged.saturating_add(1);
        self.reached.forged = true;
        true
    }

    /// Duplicates flight `i`.
    pub fn duplicate(&mut self, i: usize) {
        if let Some(f) = self.flights.get(i).cloned() {
            self.flights.insert(i + 1, f);
            self.dups = self.dups.saturating_add(1);
            self.reached.duplicated = true;
        }
    }

    /// Fires node `n`'s earliest timer: the clock moves to its deadline
    /// (never back).
    pub fn fire(&mut self, wiring: &Wiring, n: usize) {
        let Some(deadline) = self.machine(n).and_then(Machine::poll_timeout) else {
            return;
        };
        self.now = self.now.max(deadline);
        self.fires = self.fires.saturating_add(1);
        self.reached.fired = true;
        self.on_node(wiring, n, |m, now| m.handle_timeout(now));
    }

    /// Puts the flights in canonical order: sorted when links reorder,
    /// else grouped by port keeping each port's sending order.
    pub fn canonicalize(&mut self, reorder: bool) {
        if reorder {
            self.flights.sort();
        } else {
            self.flights.sort_by_key(|f| f.to);
        }
    }
}
