//! The harness's model of per-pattern contexts [CTL-050]…[CTL-053]: the
//! collectives a bound context runs, the directions of its edges that
//! carry only control messages, and the wire PSNs the peers use on them.
//!
//! Written from the SPEC text, over the invocations the harness began; the
//! engine's own mapping lives in `epic_proto::engine` (alignment.rs).

use epic_proto::engine::{PatternBinding, PsnAlignment};
use epic_proto::wire::Collective;

use super::model::Pat;
use super::*;

impl Ctx {
    /// The pattern the context is bound to, if any.
    pub(crate) fn binding(&self) -> Option<PatternBinding> {
        match self.cfg.alignment {
            PsnAlignment::Resync => None,
            PsnAlignment::PerPattern(b) => Some(b),
        }
    }

    /// Whether the engine runs an invocation of `collective` rooted at
    /// `root` on this context: any on a resync context; on a bound one its
    /// own pattern or a Barrier, in every mode. [CTL-050]
    pub(crate) fn admits(&self, collective: Collective, root: u16) -> bool {
        let Some(b) = self.binding() else {
            return true;
        };
        collective == Collective::Barrier
            || match b {
                PatternBinding::AllReduce => collective == Collective::AllReduce,
                PatternBinding::Reduce { root: r } => collective == Collective::Reduce && root == r,
                PatternBinding::Broadcast { root: r } => {
                    collective == Collective::Broadcast && root == r
                }
            }
    }

    /// The routing pattern of the binding.
    fn bound_pattern(&self) -> Option<Pat> {
        let edge = |r: u16| {
            self.cfg
                .route
                .get(usize::from(r))
                .map_or(usize::MAX, |e| usize::from(*e))
        };
        Some(match self.binding()? {
            PatternBinding::AllReduce => Pat::AllReduce,
            PatternBinding::Reduce { root } => Pat::To(edge(root)),
            PatternBinding::Broadcast { root } => Pat::From(edge(root)),
        })
    }

    /// Whether the peer of `ep` sends a bound Mode II/III context only
    /// control messages (Mode I translates nothing). [CTL-051]
    pub(crate) fn control_only_in(&self, ep: usize) -> bool {
        !self.mode1() && self.bound_pattern().is_some_and(|p| !self.sends(p, ep))
    }

    /// Whether a bound Mode II/III context sends the peer of `ep` only
    /// control messages (echoes). [CTL-051]
    pub(crate) fn control_only_out(&self, ep: usize) -> bool {
        !self.mode1() && self.bound_pattern().is_some_and(|p| !receives(p, ep))
    }

    /// Whether the engine translates the wire PSNs of `inv`'s control-only
    /// directions as the hosts number them: invocations were begun by the
    /// hosts' rule, every one begun before `inv` was installed, and the
    /// engine still holds `inv` (or has yet to install it). The engine
    /// counts those wire PSNs by its installs and maps those of the
    /// invocations it holds. [CTL-051] [CTL-052]
    pub(crate) fn translation_known(&self, inv: &ModelInv) -> bool {
        let at = self
            .invs
            .iter()
            .rposition(|i| i.h.invocation == inv.h.invocation && i.c == inv.c)
            .unwrap_or(self.invs.len());
        let skipped = self
            .invs
            .iter()
            .take(at)
            .any(|i| i.admitted && !i.installed);
        let newer = self
            .invs
            .iter()
            .skip(at + 1)
            .filter(|i| i.installed)
            .count();
        !self.tangled && !skipped && newer < epic_proto::engine::INVOCATION_SLOTS
    }

    /// Whether the engine installed an invocation after one the hosts
    /// began and it never installed: from then on it numbers control-only
    /// wire PSNs otherwise than the hosts. [CTL-051]
    pub(crate) fn install_skipped(&self) -> bool {
        let last = self.invs.iter().rposition(|i| i.installed);
        last.is_some_and(|last| {
            self.invs
                .iter()
                .take(last)
                .any(|i| i.admitted && !i.installed)
        })
    }

    /// The PSN the peer of `ep` puts on a request at group PSN `g`.
    pub(crate) fn request_psn(&self, ep: usize, g: Psn) -> Psn {
        if self.control_only_in(ep) {
            self.wire_of(g)
        } else {
            g
        }
    }

    /// The PSN the peer of `ep` acknowledges a request of the switch at
    /// group PSN `g` with.
    pub(crate) fn response_psn(&self, ep: usize, g: Psn) -> Psn {
        if self.control_only_out(ep) {
            self.wire_of(g)
        } else {
            g
        }
    }

    /// The group PSN of wire PSN `q` of a request the peer of `ep` sent.
    pub(crate) fn group_in(&self, ep: usize, q: Psn) -> Psn {
        if self.control_only_in(ep) {
            self.group_of(q)
        } else {
            q
        }
    }

    /// The group PSN of wire PSN `q` of a request the switch sent `ep`.
    pub(crate) fn group_out(&self, ep: usize, q: Psn) -> Psn {
        if self.control_only_out(ep) {
            self.group_of(q)
        } else {
            q
        }
    }

    /// The wire PSN of group PSN `g` on a control-only direction: the
    /// control's of the invocation whose range holds it; past the newest
    /// range, one more per PSN past its end. [CTL-052]
    fn wire_of(&self, g: Psn) -> Psn {
        let mut admitted = self.invs.iter().filter(|i| i.admitted).rev();
        let Some(newest) = admitted.next() else {
            return g;
        };
        if !g.is_before(newest.end()) {
            return newest.r.add(1 + g.distance_from(newest.end()));
        }
        let mut oldest = newest;
        for i in std::iter::once(newest).chain(admitted) {
            if !g.is_before(i.c) {
                return i.r;
            }
            oldest = i;
        }
        oldest.r.sub(oldest.c.distance_from(g))
    }

    /// The group PSN of wire PSN `q` on a control-only direction: the
    /// control PSN of the invocation whose control carried it; past the
    /// newest, its range's end onward. [CTL-052]
    pub(crate) fn group_of(&self, q: Psn) -> Psn {
        let mut admitted = self.invs.iter().filter(|i| i.admitted).rev();
        let Some(newest) = admitted.next() else {
            return q;
        };
        if !q.is_before(newest.r) {
            return match q.distance_from(newest.r) {
                0 => newest.c,
                k => newest.end().add(k - 1),
            };
        }
        let mut oldest = newest;
        for i in std::iter::once(newest).chain(admitted) {
            if i.r == q {
                return i.c;
            }
            oldest = i;
        }
        oldest.c.sub(oldest.r.distance_from(q))
    }
}

/// Whether the switch sends packets of `pat` toward `ep`.
fn receives(pat: Pat, ep: usize) -> bool {
    match pat {
        Pat::AllReduce => true,
        Pat::To(t) => ep == t,
        Pat::From(s) => ep != s,
    }
}

impl Harness {
    /// A control message handed in installed an invocation: marks it in
    /// the model. On a per-pattern context the engine numbers the wire
    /// PSNs of control-only directions by the installs it saw, the hosts
    /// by the invocations they began; when an earlier invocation the
    /// hosts began was never installed the two disagree, and the run is
    /// no longer clean. [CTL-051]
    pub(crate) fn note_install(&mut self, h: &EpicHeaderRepr) {
        let Some(ctx) = self.ctxs.iter_mut().find(|c| c.cfg.group == h.group_id) else {
            return;
        };
        let bound = ctx.binding().is_some() && !ctx.mode1();
        let Some(at) = ctx
            .invs
            .iter()
            .rposition(|i| i.admitted && i.h.invocation == h.invocation)
        else {
            return;
        };
        let skipped = ctx.invs.iter().take(at).any(|i| i.admitted && !i.installed);
        if let Some(i) = ctx.invs.get_mut(at) {
            i.installed = true;
        }
        if bound && skipped {
            self.clean = false;
        }
    }
}
