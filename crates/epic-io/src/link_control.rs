//! Taking an in-memory link down and up at run time ([`LinkControl`]),
//! for the in-process lab's fault injection: a pulled cable, a port shut
//! down.
//!
//! One link's state is shared between the two directions
//! [`MemFabric::connect`] made (each held by its sender's [`MemPorts`])
//! and every [`LinkControl`] handed out for it, possibly on as many
//! threads; it goes through [`crate::sync`].
//!
//! [`MemFabric::connect`]: crate::MemFabric::connect
//! [`MemPorts`]: crate::MemPorts

use crate::sync::{Arc, AtomicBool, AtomicU64, Ordering};

/// One direction of a link: from the first end given to
/// [`MemFabric::connect`](crate::MemFabric::connect) to the second
/// (`Forward`), or back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkDir {
    /// From the first end to the second.
    Forward,
    /// From the second end to the first.
    Back,
}

impl LinkDir {
    /// 0 forward, 1 back: the direction number of the link's fault
    /// streams.
    pub(crate) fn index(self) -> u8 {
        match self {
            LinkDir::Forward => 0,
            LinkDir::Back => 1,
        }
    }

    /// The other direction of the same link.
    pub(crate) fn reverse(self) -> LinkDir {
        match self {
            LinkDir::Forward => LinkDir::Back,
            LinkDir::Back => LinkDir::Forward,
        }
    }
}

/// What the two directions of a link and its controls share.
///
/// Every access is `Relaxed`: each field is a flag or a count read on
/// its own, and nothing else is published through them (a control's
/// `set_up` takes effect for the frames a sender sends after it sees the
/// store, which is as soon as a cable pull could).
#[derive(Debug)]
struct LinkState {
    up: AtomicBool,
    /// Frames of the forward direction lost in flight (rated links).
    forward_lost: AtomicU64,
    /// Frames of the back direction lost in flight (rated links).
    back_lost: AtomicU64,
}

/// The up/down switch of one in-memory link, from
/// [`MemFabric::link_control`](crate::MemFabric::link_control): both
/// directions at once, for the link's whole life (before and after
/// [`MemFabric::build`](crate::MemFabric::build)). Clones control the
/// same link. Links start up.
///
/// While the link is down, checked where each frame passes:
/// - a frame either end sends is lost at its sender, before the fault
///   injector, the congestion point or the rate pacer see it, and so is
///   a frame the reorder injector held back when it would go out;
/// - on a rated link ([`MemFabric::set_rate`](crate::MemFabric::set_rate))
///   a frame still being serialized is lost as it falls due at the far
///   end (the state is read then, not its history: a frame due after
///   the link came back up is delivered);
/// - on a link without a rate a frame is at the far node as soon as it
///   is sent: frames already in its inbox are not lost.
///
/// Every frame lost so is counted at its sender, in
/// [`PortStats::link_down_lost`](crate::PortStats::link_down_lost) (the
/// ones lost in flight are counted by the receiver in the link's shared
/// state and added to the sender's counters when they are read).
#[derive(Debug, Clone)]
pub struct LinkControl {
    state: Arc<LinkState>,
}

impl LinkControl {
    /// The control of a new link, up.
    pub(crate) fn new() -> LinkControl {
        LinkControl {
            state: Arc::new(LinkState {
                up: AtomicBool::new(true),
                forward_lost: AtomicU64::new(0),
                back_lost: AtomicU64::new(0),
            }),
        }
    }

    /// Takes the link down (`false`) or brings it back up (`true`).
    pub fn set_up(&self, up: bool) {
        self.state.up.store(up, Ordering::Relaxed);
    }

    /// Whether the link is up.
    pub fn is_up(&self) -> bool {
        self.state.up.load(Ordering::Relaxed)
    }

    fn lost(&self, dir: LinkDir) -> &AtomicU64 {
        match dir {
            LinkDir::Forward => &self.state.forward_lost,
            LinkDir::Back => &self.state.back_lost,
        }
    }

    /// Counts a frame of direction `dir` lost in flight (by its receiver).
    pub(crate) fn lose_in_flight(&self, dir: LinkDir) {
        self.lost(dir).fetch_add(1, Ordering::Relaxed);
    }

    /// Frames of direction `dir` lost in flight so far.
    pub(crate) fn lost_in_flight(&self, dir: LinkDir) -> u64 {
        self.lost(dir).load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(epic_loom)))]
mod tests {
    use super::{LinkControl, LinkDir};

    /// Clones share the state; the two directions' counts are apart.
    #[test]
    fn clones_control_one_link() {
        let a = LinkControl::new();
        let b = a.clone();
        assert!(a.is_up() && b.is_up());
        b.set_up(false);
        assert!(!a.is_up());
        a.lose_in_flight(LinkDir::Back);
        assert_eq!(b.lost_in_flight(LinkDir::Back), 1);
        assert_eq!(b.lost_in_flight(LinkDir::Forward), 0);
        assert_eq!(LinkDir::Forward.reverse(), LinkDir::Back);
        a.set_up(true);
        assert!(b.is_up());
    }
}
