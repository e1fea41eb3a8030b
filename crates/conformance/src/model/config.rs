//! What to check: the tree, the mode, the call and the faults the search
//! may inject. [VER-003]

use core::fmt;

use epic_proto::engine::{Mode, Pitfall};
use epic_proto::roce::Transport;
use epic_topology::TreeSpec;

/// The collectives the checker runs (the paper's Appendix H three).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelCollective {
    /// Every rank gets the sum.
    AllReduce,
    /// The root gets the sum.
    Reduce,
    /// Every rank gets the root's vector.
    Broadcast,
}

impl ModelCollective {
    /// The three, in the paper's order.
    pub const ALL: [ModelCollective; 3] = [
        ModelCollective::AllReduce,
        ModelCollective::Reduce,
        ModelCollective::Broadcast,
    ];

    /// `allreduce`, `reduce` or `broadcast`.
    pub fn name(self) -> &'static str {
        match self {
            ModelCollective::AllReduce => "allreduce",
            ModelCollective::Reduce => "reduce",
            ModelCollective::Broadcast => "broadcast",
        }
    }
}

/// One configuration to check exhaustively. [VER-003]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelConfig {
    /// The tree (`tree-3-2` is the paper's: one spine, two leaves, four
    /// ranks).
    pub tree: TreeSpec,
    /// Mode I, II or III.
    pub mode: Mode,
    /// The call.
    pub collective: ModelCollective,
    /// Packets each rank sends (one per message, all in flight at once).
    pub packets: u32,
    /// Frames the search may drop, in all.
    pub max_loss: u8,
    /// Frames the search may duplicate, in all.
    pub max_dup: u8,
    /// Frames from outside the group the search may send, in all: each a
    /// copy of a data packet in flight from a host that is not the
    /// endpoint's peer, with other data ([`super::forge`]). [VER-010]
    pub max_foreign: u8,
    /// Frames on a link may overtake each other.
    pub reorder: bool,
    /// Calls each rank runs, one after the other: the next starts as the
    /// last one completes with the exact result. [VER-011]
    pub calls: u8,
    /// The ranks are contended: every switch holds the group's context in
    /// a block shared with a second group (which never takes it), and
    /// every call is bracketed by an acquire and a release Barrier
    /// (temporal multiplexing, §6.2). [VER-011] [TMX-010]
    pub contended: bool,
    /// The ranks' transport profile.
    pub transport: Transport,
    /// A deliberately wrong engine (mutants only).
    pub pitfall: Option<Pitfall>,
    /// N, slots per pipe, if not the cluster's rule (2·(M·W + 1) rounded
    /// up to a power of two).
    pub slots: Option<u32>,
    /// Timer firings a run may take before it counts as a livelock.
    pub max_timeouts: u16,
    /// Partial-order reduction where it is sound (FIFO links, no
    /// contention): persistent sets in a depth-first search of one thread
    /// ([`super::ample`], [`super::search`]). [VER-012]
    pub por: bool,
    /// Worker threads (of a search without partial-order reduction).
    pub threads: usize,
    /// Breadth-first (gives the diameter, keeps the frontier's states in
    /// memory) instead of depth-first (keeps only fingerprints and the
    /// path).
    pub bfs: bool,
    /// Give up after this long; a search stopped here is reported as not
    /// exhaustive.
    pub time_limit: Option<std::time::Duration>,
    /// Give up after this many distinct states (0: no limit); a search
    /// stopped here is reported as not exhaustive.
    pub max_states: usize,
}

impl ModelConfig {
    /// The paper's setting for `mode` and `collective`: Tree-3-2, three
    /// packets per rank, at most one loss, links that reorder, go-back-N.
    pub fn paper(mode: Mode, collective: ModelCollective) -> ModelConfig {
        ModelConfig {
            tree: TreeSpec {
                depth: 3,
                degree: 2,
            },
            mode,
            collective,
            packets: 3,
            max_loss: 1,
            max_dup: 0,
            max_foreign: 0,
            reorder: true,
            calls: 1,
            contended: false,
            transport: Transport::Gbn,
            pitfall: None,
            slots: None,
            max_timeouts: DEFAULT_MAX_TIMEOUTS,
            por: true,
            threads: 1,
            bfs: false,
            time_limit: None,
            max_states: 0,
        }
    }
}

/// Timer firings a run may take before it counts as a livelock: with
/// retry_cnt 7 ("retry forever", rxe's [RC-041]) a run whose peer never
/// answers retries without end, and logical time grows with it, so the
/// search bounds it here and reports such a run. [VER-005]
pub const DEFAULT_MAX_TIMEOUTS: u16 = 24;

impl ModelConfig {
    /// Whether the search uses partial-order reduction: asked for, and
    /// sound here (FIFO links: with reordering no set short of every step
    /// is persistent; uncontended: [VER-011]'s property spans machines),
    /// and depth-first.
    pub fn reduces(&self) -> bool {
        self.por && !self.reorder && !self.contended && !self.bfs
    }

    /// The `epic model-check` arguments that select this configuration
    /// (written into a counterexample so that it replays).
    pub fn args(&self) -> String {
        let mut a = format!(
            "--mode {} --collective {} --topology {} --packets {} --max-loss {} --max-dup {}",
            self.mode.number(),
            self.collective.name(),
            self.tree,
            self.packets,
            self.max_loss,
            self.max_dup
        );
        if self.max_timeouts != DEFAULT_MAX_TIMEOUTS {
            a.push_str(&format!(" --max-timeouts {}", self.max_timeouts));
        }
        if self.max_foreign > 0 {
            a.push_str(&format!(" --foreign {}", self.max_foreign));
        }
        if self.calls != 1 {
            a.push_str(&format!(" --calls {}", self.calls));
        }
        if self.contended {
            a.push_str(" --contended");
        }
        if self.reorder {
            a.push_str(" --reorder");
        }
        if !self.por {
            a.push_str(" --no-por");
        }
        if let Transport::Sr(_) = self.transport {
            a.push_str(" --transport sr");
        }
        if let Some(s) = self.slots {
            a.push_str(&format!(" --slots {s}"));
        }
        if let Some(p) = self.pitfall {
            a.push_str(&format!(" --mutant {}", p.name()));
        }
        a
    }
}

impl fmt::Display for ModelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "mode {} {} {} {} packets{}, loss ≤ {}, dup ≤ {}, {}{}, {}",
            self.mode.number(),
            self.collective.name(),
            self.tree,
            self.packets,
            match (self.calls, self.contended) {
                (1, false) => String::new(),
                (n, false) => format!(", {n} calls"),
                (n, true) => format!(", {n} contended calls"),
            },
            self.max_loss,
            self.max_dup,
            if self.max_foreign > 0 {
                format!("foreign ≤ {}, ", self.max_foreign)
            } else {
                String::new()
            },
            if self.reorder {
                "reordering"
            } else {
                "FIFO links"
            },
            match self.transport {
                Transport::Gbn => "go-back-N",
                Transport::Sr(_) => "SR",
            }
        )
    }
}
