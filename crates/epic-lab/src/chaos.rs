//! Faults the lab injects at chosen moments of each mode's sweep
//! (`--chaos`): a switch killed and restarted without its contexts, a link
//! taken down and brought back, the manager killed; in process (the
//! switch's task, the in-memory link, the manager's server task) and on
//! namespaces (SIGKILL of the `epic switch` or `epic manager` process and
//! a new one, `ip link set … down`). The report says, per fault, when it
//! struck and how long the group took to complete a call again.
//! [LAB-020]…[LAB-022]
//!
//! `--chaos kill-switch:leaf1@200ms,link-down:spine-leaf0@1s+300ms,kill-manager@500ms`:
//! `@` the moment, after the mode's first cluster is up; `+` how long the
//! switch or manager stays dead or the link down (default
//! [`DEFAULT_DOWN`]).
//! Switches are `switchN` (the tree's numbering), or on a three-level tree
//! `spine` and `leafN` (the N-th switch above the ranks); link ends are
//! switches or `rankN`.

use std::fmt;
use std::time::{Duration, Instant};

use epic_io::LinkControl;
use epic_topology::{IncTree, PortPeer};
use incengine::SwitchControl;
use tokio::task::{AbortHandle, JoinHandle};

use crate::netns::cmd::ip_in;
use crate::netns::{ManagerProc, SwitchRestart};
use crate::sync::{Arc, Mutex, PoisonError};

/// How long a killed switch stays dead, or a link down, when the fault
/// does not say.
pub const DEFAULT_DOWN: Duration = Duration::from_millis(100);

/// One end of a tree link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Node {
    /// A switch, by the tree's index.
    Switch(usize),
    /// A rank.
    Rank(u16),
}

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The switch dies (every context and all state lost) and restarts
    /// after the down time with its static configuration. [LAB-020]
    KillSwitch(Node),
    /// The link between the two carries nothing for the down time.
    /// [LAB-020]
    LinkDown(Node, Node),
    /// The manager dies (on namespaces: SIGKILL, started again on its
    /// store after the down time); the ranks carry on. [LAB-020]
    KillManager,
}

/// A fault and its moment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChaosEvent {
    /// The fault.
    pub fault: Fault,
    /// When, after the mode's cluster started.
    pub at: Duration,
    /// How long the switch stays dead or the link down.
    pub down: Duration,
    /// The name it was given (`leaf1`, `spine-leaf0`).
    pub name: String,
}

/// A `--chaos` value that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--chaos {item:?}: {why}")]
pub struct BadChaos {
    /// The item.
    pub item: String,
    /// What is wrong with it.
    pub why: String,
}

impl fmt::Display for ChaosEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.fault {
            Fault::KillSwitch(_) => "kill-switch",
            Fault::LinkDown(..) => "link-down",
            Fault::KillManager => "kill-manager",
        };
        let target = if self.name.is_empty() {
            String::new()
        } else {
            format!(":{}", self.name)
        };
        write!(f, "{kind}{target}@{}+{}", ms(self.at), ms(self.down))
    }
}

fn ms(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

/// Parses `200ms`, `1s`, `1.5s`, `500us`.
fn duration(s: &str) -> Option<Duration> {
    let (num, unit) = s
        .find(|c: char| c.is_ascii_alphabetic())
        .map_or((s, "ms"), |i| s.split_at(i));
    let v: f64 = num.parse().ok()?;
    let scale = match unit {
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => return None,
    };
    let secs = v * scale;
    (secs.is_finite() && (0.0..=86_400.0).contains(&secs)).then(|| Duration::from_secs_f64(secs))
}

/// The events of a `--chaos` value, checked against nothing yet (see
/// [`ChaosEvent::resolve`]).
pub fn parse(value: &str) -> Result<Vec<ChaosEvent>, BadChaos> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let bad = |why: &str| BadChaos {
                item: item.to_string(),
                why: why.to_string(),
            };
            let (head, when) = item
                .split_once('@')
                .ok_or_else(|| bad("expected KIND[:TARGET]@TIME[+DOWN]"))?;
            let (at, down) = match when.split_once('+') {
                Some((a, d)) => (a, Some(d)),
                None => (when, None),
            };
            let at = duration(at).ok_or_else(|| bad("the time is not like 200ms, 1s or 1.5s"))?;
            let down = match down {
                Some(d) => duration(d).ok_or_else(|| bad("the down time is not like 100ms"))?,
                None => DEFAULT_DOWN,
            };
            let (kind, target) = match head.split_once(':') {
                Some((k, t)) => (k, t),
                None => (head, ""),
            };
            let fault = match (kind, target.is_empty()) {
                // Targets are resolved against the tree later.
                ("kill-switch", false) => Fault::KillSwitch(Node::Switch(usize::MAX)),
                ("link-down", false) => {
                    Fault::LinkDown(Node::Switch(usize::MAX), Node::Switch(usize::MAX))
                }
                ("kill-manager", true) => Fault::KillManager,
                ("kill-switch" | "link-down", true) => return Err(bad("names no target")),
                ("kill-manager", false) => return Err(bad("kill-manager takes no target")),
                _ => {
                    return Err(bad(
                        "the kind is not kill-switch, link-down or kill-manager",
                    ))
                }
            };
            Ok(ChaosEvent {
                fault,
                at,
                down,
                name: target.to_string(),
            })
        })
        .collect()
}

/// A node of `tree` by name: `switchN`, `rankN`, and on a three-level
/// tree `spine` and `leafN`.
fn node(tree: &IncTree, name: &str) -> Option<Node> {
    let switches = tree.switches.len();
    let leaves: Vec<usize> = tree
        .switches
        .iter()
        .filter(|s| s.ports.iter().any(|p| matches!(p, PortPeer::Host(_))))
        .map(|s| s.index)
        .collect();
    if let Some(n) = name.strip_prefix("switch") {
        return n.parse().ok().filter(|i| *i < switches).map(Node::Switch);
    }
    if let Some(n) = name.strip_prefix("rank") {
        let r: u16 = n.parse().ok()?;
        return (usize::from(r) < tree.hosts.len()).then_some(Node::Rank(r));
    }
    if let Some(n) = name.strip_prefix("leaf") {
        let i: usize = n.parse().ok()?;
        return leaves.get(i).copied().map(Node::Switch);
    }
    if name == "spine" && tree.spec.depth == 3 {
        return Some(Node::Switch(0));
    }
    None
}

/// Whether `a` and `b` are joined by a link of `tree`.
fn linked(tree: &IncTree, a: Node, b: Node) -> bool {
    let touches = |s: usize, other: Node| {
        tree.switches.get(s).is_some_and(|sw| {
            sw.ports.iter().any(|p| match (p, other) {
                (PortPeer::Host(r), Node::Rank(o)) => *r == o,
                (PortPeer::Switch(o, _), Node::Switch(x)) => *o == x,
                _ => false,
            })
        })
    };
    match (a, b) {
        (Node::Switch(s), o) | (o, Node::Switch(s)) => touches(s, o),
        _ => false,
    }
}

impl ChaosEvent {
    /// The event with its target found in `tree`.
    pub fn resolve(&self, tree: &IncTree) -> Result<ChaosEvent, BadChaos> {
        let bad = |why: String| BadChaos {
            item: self.to_string(),
            why,
        };
        let fault = match self.fault {
            Fault::KillSwitch(_) => match node(tree, &self.name) {
                Some(n @ Node::Switch(_)) => Fault::KillSwitch(n),
                _ => {
                    return Err(bad(format!(
                        "{} names no switch of {}",
                        self.name, tree.spec
                    )))
                }
            },
            Fault::LinkDown(..) => {
                // Split at a '-' that leaves a node on both sides.
                let ends = self.name.match_indices('-').find_map(|(i, _)| {
                    let (a, b) = (self.name.get(..i)?, self.name.get(i + 1..)?);
                    Some((node(tree, a)?, node(tree, b)?))
                });
                match ends {
                    Some((a, b)) if linked(tree, a, b) => Fault::LinkDown(a, b),
                    _ => {
                        return Err(bad(format!(
                            "{} names no link of {} (A-B, each switchN, spine, leafN or rankN)",
                            self.name, tree.spec
                        )))
                    }
                }
            }
            Fault::KillManager => Fault::KillManager,
        };
        Ok(ChaosEvent {
            fault,
            ..self.clone()
        })
    }
}

/// What one fault did in one mode's sweep. [LAB-022]
#[derive(Debug, Clone, PartialEq)]
pub struct ChaosOutcome {
    /// The mode.
    pub mode: String,
    /// The fault as given.
    pub event: String,
    /// When it struck, after the mode's sweep started (`None`: the sweep
    /// ended first).
    pub struck: Option<Duration>,
    /// From the fault to the end of the first call every rank completed
    /// after it (`None`: none did).
    pub recovered_after: Option<Duration>,
}

impl fmt::Display for ChaosOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mode {}: {}: ", self.mode, self.event)?;
        match (self.struck, self.recovered_after) {
            (None, _) => write!(f, "not reached (the sweep ended first)"),
            (Some(t), None) => write!(
                f,
                "struck at {} ms; no call completed after it",
                t.as_millis()
            ),
            (Some(t), Some(r)) => write!(
                f,
                "struck at {} ms; the next call completed {:.1} ms later",
                t.as_millis(),
                r.as_secs_f64() * 1e3
            ),
        }
    }
}

/// A switch a fault can kill.
#[derive(Debug, Clone)]
pub(crate) enum SwitchTarget {
    /// An in-process switch: crash-restarted by its task.
    Task(SwitchControl),
    /// An `epic switch` process on namespaces: SIGKILL, then started
    /// again.
    Process(SwitchRestart),
}

/// A link a fault can take down.
#[derive(Debug, Clone)]
pub(crate) enum LinkTarget {
    /// An in-memory link.
    Mem(LinkControl),
    /// A veth pair on namespaces, by one end (`ip link set … down`).
    Veth {
        /// The namespace of that end.
        ns: String,
        /// The interface.
        iface: String,
    },
}

/// The manager a fault can kill.
#[derive(Debug, Clone)]
pub(crate) enum ManagerTarget {
    /// The in-process manager's server task: stopped.
    Task(AbortHandle),
    /// The `epic manager serve` process: SIGKILL, then started again on
    /// the same store.
    Process(Arc<Mutex<ManagerProc>>),
}

/// What a running cluster offers the faults: its switches, its links
/// and its manager.
#[derive(Debug, Default)]
pub(crate) struct Targets {
    /// The switches, by the tree's index.
    pub(crate) switches: Vec<SwitchTarget>,
    /// Every link, by its two ends.
    pub(crate) links: Vec<(Node, Node, LinkTarget)>,
    /// The manager.
    pub(crate) manager: Option<ManagerTarget>,
}

/// The faults of one cluster, striking on their own task.
#[derive(Debug)]
pub(crate) struct ChaosRun {
    events: Vec<ChaosEvent>,
    /// When each event struck, after `born`.
    struck: Arc<Mutex<Vec<Option<Duration>>>>,
    born: Instant,
    task: JoinHandle<()>,
}

impl ChaosRun {
    /// Starts striking `events` (resolved) at their moments after `born`
    /// (the mode's start: at once if that moment has passed), on the
    /// current runtime.
    pub(crate) fn start(events: &[ChaosEvent], targets: Targets, born: Instant) -> ChaosRun {
        let struck = Arc::new(Mutex::new(vec![None; events.len()]));
        let mut order: Vec<(usize, ChaosEvent)> = events.iter().cloned().enumerate().collect();
        order.sort_by_key(|(_, e)| e.at);
        let log = Arc::clone(&struck);
        let task = tokio::spawn(async move {
            for (i, e) in order {
                tokio::time::sleep_until(tokio::time::Instant::from_std(born + e.at)).await;
                strike(&e, &targets).await;
                let at = born.elapsed();
                tracing::info!(event = %e, at_ms = at.as_millis(), "chaos");
                if let Some(slot) = log
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_mut(i)
                {
                    *slot = Some(at);
                }
            }
        });
        ChaosRun {
            events: events.to_vec(),
            struck,
            born,
            task,
        }
    }

    /// Stops striking and says what each fault that struck did, given the
    /// moments calls completed; the faults that had not struck yet come
    /// back, for the mode's next cluster. [LAB-022]
    pub(crate) fn finish(
        &self,
        mode: &str,
        completions: &[Instant],
    ) -> (Vec<ChaosOutcome>, Vec<ChaosEvent>) {
        self.task.abort();
        let struck = self
            .struck
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut done = Vec::new();
        let mut pending = Vec::new();
        for (e, at) in self.events.iter().zip(struck) {
            let Some(at) = at else {
                pending.push(e.clone());
                continue;
            };
            let recovered_after = completions
                .iter()
                .map(|c| c.saturating_duration_since(self.born))
                .filter(|c| *c > at)
                .min()
                .map(|c| c - at);
            done.push(ChaosOutcome {
                mode: mode.to_string(),
                event: e.to_string(),
                struck: Some(at),
                recovered_after,
            });
        }
        (done, pending)
    }
}

impl ChaosOutcome {
    /// A fault the mode's sweep ended before.
    pub(crate) fn not_reached(mode: &str, e: &ChaosEvent) -> ChaosOutcome {
        ChaosOutcome {
            mode: mode.to_string(),
            event: e.to_string(),
            struck: None,
            recovered_after: None,
        }
    }
}

impl Drop for ChaosRun {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Does what `e` says to `targets`. The down time runs on a task of its
/// own, so that the next fault strikes on time.
async fn strike(e: &ChaosEvent, targets: &Targets) {
    let down = e.down;
    let name = e.to_string();
    match e.fault {
        Fault::KillSwitch(Node::Switch(i)) => match targets.switches.get(i) {
            Some(SwitchTarget::Task(s)) => {
                if let Err(err) = s.crash(down).await {
                    tracing::warn!(event = %name, %err, "the switch could not be killed");
                }
            }
            Some(SwitchTarget::Process(p)) => {
                let p = p.clone();
                tokio::task::spawn_blocking(move || {
                    p.kill();
                    std::thread::sleep(down);
                    if let Err(err) = p.restart() {
                        tracing::error!(event = %name, %err, "the switch did not start again");
                    }
                });
            }
            None => {}
        },
        Fault::KillSwitch(Node::Rank(_)) => {}
        Fault::LinkDown(a, b) => {
            let link = targets
                .links
                .iter()
                .find(|(x, y, _)| (*x, *y) == (a, b) || (*x, *y) == (b, a));
            match link.map(|(_, _, l)| l.clone()) {
                Some(LinkTarget::Mem(l)) => {
                    l.set_up(false);
                    tokio::spawn(async move {
                        tokio::time::sleep(down).await;
                        l.set_up(true);
                    });
                }
                Some(LinkTarget::Veth { ns, iface }) => {
                    tokio::task::spawn_blocking(move || {
                        let set = |state: &str| {
                            if let Err(err) = ip_in(&ns, &["link", "set", &iface, state]) {
                                tracing::error!(event = %name, %err, "ip link set {state}");
                            }
                        };
                        set("down");
                        std::thread::sleep(down);
                        set("up");
                    });
                }
                None => {}
            }
        }
        Fault::KillManager => match &targets.manager {
            Some(ManagerTarget::Task(m)) => m.abort(),
            Some(ManagerTarget::Process(m)) => {
                let m = Arc::clone(m);
                tokio::task::spawn_blocking(move || {
                    let mut m = m.lock().unwrap_or_else(PoisonError::into_inner);
                    m.kill();
                    std::thread::sleep(down);
                    if let Err(err) = m.restart() {
                        tracing::error!(event = %name, %err, "the manager did not start again");
                    }
                });
            }
            None => {}
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    /// [LAB-020] The example parses and resolves on Tree-3-2; bad
    /// items are refused with the reason, never a panic.
    #[test]
    fn lab_020_chaos_items_parse_and_resolve() {
        let tree = IncTree::new("tree-3-2".parse().unwrap()).unwrap();
        let ev =
            parse("kill-switch:leaf1@200ms, link-down:spine-leaf0@1s+300ms,kill-manager@500ms")
                .unwrap();
        assert_eq!(ev.len(), 3);
        let r: Vec<ChaosEvent> = ev.iter().map(|e| e.resolve(&tree).unwrap()).collect();
        let leaf1 = node(&tree, "leaf1").unwrap();
        assert_eq!(r[0].fault, Fault::KillSwitch(leaf1));
        assert_ne!(leaf1, Node::Switch(0));
        assert_eq!(r[0].at, Duration::from_millis(200));
        assert_eq!(r[0].down, DEFAULT_DOWN);
        assert_eq!(
            r[1].fault,
            Fault::LinkDown(Node::Switch(0), node(&tree, "leaf0").unwrap())
        );
        assert_eq!(
            (r[1].at, r[1].down),
            (Duration::from_secs(1), Duration::from_millis(300))
        );
        assert_eq!(r[2].fault, Fault::KillManager);
        assert_eq!(r[1].to_string(), "link-down:spine-leaf0@1000ms+300ms");
        let rank_link = parse("link-down:leaf0-rank0@1.5s").unwrap()[0].resolve(&tree);
        assert!(rank_link.is_ok(), "{rank_link:?}");
        for bad in [
            "kill-switch@1s",
            "kill-switch:leaf1",
            "kill-switch:leaf1@soon",
            "reboot:leaf1@1s",
            "kill-manager:x@1s",
            "link-down:spine@1s+x",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        for unresolved in [
            "kill-switch:leaf9@1s",
            "kill-switch:rank0@1s",
            "link-down:leaf0-leaf1@1s",
            "link-down:spine-rank0@1s",
            "link-down:spine@1s",
        ] {
            let e = parse(unresolved).unwrap()[0].resolve(&tree);
            assert!(e.is_err(), "{unresolved}");
        }
    }
}
