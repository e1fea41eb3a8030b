//! Faults on the real links: the kernel's `tc netem` where the kernel has
//! it (loss, reordering, duplication, delay), else nftables rules on the
//! veths' netdev egress hook (loss and duplication; this kernel cannot
//! delay or reorder without netem, and saying so beats faking it).
//! Faults go on both directions of every link, or of `lossy_links` of
//! them chosen by the seed. [LAB-008]

use core::fmt;

use epic_io::LinkFaults;

use super::topo::LinkEnd;
use super::{cmd, NetnsError, UnsupportedFaults};

/// What puts the faults on a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultBackend {
    /// `tc qdisc … netem`.
    Netem,
    /// `nft` rules on the netdev egress hook: `numgen random` drops and
    /// `dup to` the same device.
    Nftables,
}

impl fmt::Display for FaultBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultBackend::Netem => "tc netem",
            FaultBackend::Nftables => "nftables netdev egress (this kernel has no sch_netem)",
        })
    }
}

/// The faults of a namespace run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NetnsFaults {
    pub(crate) faults: LinkFaults,
    /// One-way delay added on each direction, µs.
    pub(crate) delay_us: u64,
}

impl NetnsFaults {
    pub(crate) fn any(&self) -> bool {
        self.faults.loss > 0.0
            || self.faults.reorder > 0.0
            || self.faults.duplicate > 0.0
            || self.delay_us > 0
    }
}

/// Whether this kernel has netem: tries it on `probe` (then removes it).
pub(crate) fn detect(probe: &LinkEnd) -> FaultBackend {
    let added = cmd::exec_in(
        &probe.ns,
        "tc",
        &[
            "qdisc",
            "add",
            "dev",
            &probe.iface,
            "root",
            "netem",
            "delay",
            "1us",
        ],
    );
    if added.is_ok() {
        let _ = cmd::exec_in(
            &probe.ns,
            "tc",
            &["qdisc", "del", "dev", &probe.iface, "root"],
        );
        FaultBackend::Netem
    } else {
        FaultBackend::Nftables
    }
}

/// Refuses what `backend` cannot do.
pub(crate) fn check(backend: FaultBackend, f: &NetnsFaults) -> Result<(), NetnsError> {
    if backend == FaultBackend::Nftables && (f.faults.reorder > 0.0 || f.delay_us > 0) {
        return Err(UnsupportedFaults::NoNetem.into());
    }
    Ok(())
}

/// Puts `f` on both ends' egress of every link in `links`.
pub(crate) fn apply(
    backend: FaultBackend,
    links: &[(LinkEnd, LinkEnd)],
    f: &NetnsFaults,
) -> Result<(), NetnsError> {
    for (a, b) in links {
        for end in [a, b] {
            match backend {
                FaultBackend::Netem => netem(end, f)?,
                FaultBackend::Nftables => nft(end, f)?,
            }
        }
    }
    Ok(())
}

fn percent(p: f64) -> String {
    format!("{:.4}%", p * 100.0)
}

fn netem(end: &LinkEnd, f: &NetnsFaults) -> Result<(), NetnsError> {
    let args = netem_args(&end.iface, f);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cmd::exec_in(&end.ns, "tc", &args).map(drop)
}

/// `tc` arguments that put `f` on `iface`'s egress.
fn netem_args(iface: &str, f: &NetnsFaults) -> Vec<String> {
    let mut args: Vec<String> = ["qdisc", "replace", "dev", iface, "root", "netem"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    // netem reorders by sending some frames at once and delaying the
    // rest: reordering needs a delay (100 µs unless one is given).
    let delay = if f.faults.reorder > 0.0 && f.delay_us == 0 {
        100
    } else {
        f.delay_us
    };
    if delay > 0 {
        args.extend(["delay".into(), format!("{delay}us")]);
    }
    if f.faults.loss > 0.0 {
        args.extend(["loss".into(), percent(f.faults.loss)]);
    }
    if f.faults.duplicate > 0.0 {
        args.extend(["duplicate".into(), percent(f.faults.duplicate)]);
    }
    if f.faults.reorder > 0.0 {
        args.extend(["reorder".into(), percent(f.faults.reorder)]);
    }
    args.extend(["limit".into(), "100000".into()]);
    args
}

/// Per million: `numgen random mod 1000000 < n` is true with probability
/// n / 10^6.
fn per_million(p: f64) -> u64 {
    (p * 1e6).round().clamp(0.0, 1e6) as u64
}

fn nft(end: &LinkEnd, f: &NetnsFaults) -> Result<(), NetnsError> {
    let chain = format!("egress_{}", end.iface);
    let mut rules = String::new();
    if f.faults.loss > 0.0 {
        rules.push_str(&format!(
            "    numgen random mod 1000000 < {} counter drop\n",
            per_million(f.faults.loss)
        ));
    }
    if f.faults.duplicate > 0.0 {
        rules.push_str(&format!(
            "    numgen random mod 1000000 < {} counter dup to \"{}\"\n",
            per_million(f.faults.duplicate),
            end.iface
        ));
    }
    let script = format!(
        "table netdev epic_lab {{\n  chain {chain} {{\n    type filter hook egress device \"{}\" priority 0; policy accept;\n{rules}  }}\n}}\n",
        end.iface
    );
    let file = std::env::temp_dir().join(format!(
        "epic-lab-{}-{}-{}.nft",
        std::process::id(),
        end.ns,
        end.iface
    ));
    std::fs::write(&file, script).map_err(|source| NetnsError::Faults {
        path: file.clone(),
        source,
    })?;
    let path = file.to_string_lossy().into_owned();
    let done = cmd::exec_in(&end.ns, "nft", &["-f", &path]);
    let _ = std::fs::remove_file(&file);
    done.map(drop)
}

/// The links to make faulty: all, or `n` of them picked by `seed`.
pub(crate) fn choose(
    links: &[(LinkEnd, LinkEnd)],
    n: Option<usize>,
    seed: u64,
) -> Vec<(LinkEnd, LinkEnd)> {
    let Some(n) = n else {
        return links.to_vec();
    };
    // A seeded Fisher–Yates shuffle (splitmix64), then the first n.
    let mut order: Vec<usize> = (0..links.len()).collect();
    let mut state = seed;
    for i in (1..order.len()).rev() {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let j = usize::try_from(z % (i as u64 + 1)).unwrap_or(0);
        order.swap(i, j);
    }
    order
        .into_iter()
        .take(n)
        .filter_map(|i| links.get(i).cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(i: usize) -> LinkEnd {
        LinkEnd {
            ns: format!("n{i}"),
            iface: "p0".into(),
        }
    }

    #[test]
    fn lossy_links_are_a_seeded_subset() {
        let links: Vec<_> = (0..6).map(|i| (end(i), end(i + 10))).collect();
        assert_eq!(choose(&links, None, 1), links);
        let a = choose(&links, Some(2), 7);
        assert_eq!(a.len(), 2);
        assert_eq!(a, choose(&links, Some(2), 7));
        assert_ne!(a[0], a[1]);
        assert_eq!(choose(&links, Some(99), 7).len(), 6);
    }

    /// [LAB-008] netem gets every fault, and a delay to reorder behind.
    #[test]
    fn netem_arguments() {
        let f = NetnsFaults {
            faults: LinkFaults {
                loss: 0.01,
                reorder: 0.05,
                duplicate: 0.002,
            },
            delay_us: 0,
        };
        assert_eq!(
            netem_args("p1", &f).join(" "),
            "qdisc replace dev p1 root netem delay 100us loss 1.0000% duplicate 0.2000% reorder 5.0000% limit 100000"
        );
        let f = NetnsFaults {
            faults: LinkFaults::NONE,
            delay_us: 250,
        };
        assert_eq!(
            netem_args("eth0", &f).join(" "),
            "qdisc replace dev eth0 root netem delay 250us limit 100000"
        );
        assert!(check(FaultBackend::Nftables, &f).is_err());
        assert!(check(FaultBackend::Netem, &f).is_ok());
    }

    #[test]
    fn probabilities_become_per_million_thresholds() {
        assert_eq!(per_million(0.01), 10_000);
        assert_eq!(per_million(1.0), 1_000_000);
        assert_eq!(per_million(0.0), 0);
    }
}
