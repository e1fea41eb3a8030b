//! The value types and parsers of the arguments of `epic sim`, `epic lab`
//! and `epic conformance`: one parser for each kind of value, so every
//! subcommand takes the same names and aliases.

use epic_lab::LabMode;
use epic_proto::engine::Mode;
use epic_proto::roce::Mtu;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use epic_topology::TreeSpec;

/// `--mode` of every subcommand: an INC mode, the host fallback, or all;
/// several comma-separated (`2,3`). Subcommands without a host fallback
/// refuse `host` ([`inc_modes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ModeArg {
    /// Mode I, connection terminated.
    #[value(name = "1", alias = "i")]
    One,
    /// Mode II, connection translated.
    #[value(name = "2", alias = "ii")]
    Two,
    /// Mode III, connection augmented.
    #[value(name = "3", alias = "iii")]
    Three,
    /// Host fallback (no INC): ring, binomial tree, dissemination.
    Host,
    /// Every mode the subcommand runs.
    All,
}

/// `--mode host` given to a subcommand that runs only the INC modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("--mode host: {0} runs only the INC modes (1, 2, 3 or all)")]
pub(crate) struct HostModeRefused(pub(crate) &'static str);

/// The lab's modes, in the order given, each once; `all` is I, II, III
/// and the host fallback.
pub(crate) fn lab_modes(list: &[ModeArg]) -> Vec<LabMode> {
    let mut modes: Vec<LabMode> = Vec::new();
    for m in list {
        let more = match m {
            ModeArg::One => vec![LabMode::Inc(Mode::Terminated)],
            ModeArg::Two => vec![LabMode::Inc(Mode::Translated)],
            ModeArg::Three => vec![LabMode::Inc(Mode::Augmented)],
            ModeArg::Host => vec![LabMode::Host],
            ModeArg::All => LabMode::ALL.to_vec(),
        };
        for m in more {
            if !modes.contains(&m) {
                modes.push(m);
            }
        }
    }
    modes
}

/// The INC modes, in the order given, each once (`all` is I, II, III);
/// `host` is refused by `command`, which has no host fallback.
pub(crate) fn inc_modes(
    list: &[ModeArg],
    command: &'static str,
) -> Result<Vec<Mode>, HostModeRefused> {
    if list.contains(&ModeArg::Host) {
        return Err(HostModeRefused(command));
    }
    Ok(lab_modes(list)
        .into_iter()
        .filter_map(|m| match m {
            LabMode::Inc(mode) => Some(mode),
            LabMode::Host => None,
        })
        .collect())
}

/// `--collective` of every subcommand; several comma-separated. Every
/// two-word name is also accepted with a hyphen and as one word
/// (`all_reduce`, `all-reduce`, `allreduce`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CollectiveArg {
    /// AllReduce.
    #[value(name = "all_reduce", aliases = ["all-reduce", "allreduce"])]
    AllReduce,
    /// Reduce to `--root`.
    Reduce,
    /// Broadcast from `--root`.
    Broadcast,
    /// Barrier (sizes ignored; reports operations per second).
    Barrier,
    /// ReduceScatter; the size is a rank's whole input (K blocks).
    #[value(name = "reduce_scatter", aliases = ["reduce-scatter", "reducescatter"])]
    ReduceScatter,
    /// AllGather; the size is the gathered output (K blocks).
    #[value(name = "all_gather", aliases = ["all-gather", "allgather"])]
    AllGather,
    /// All six, in the order above.
    All,
}

/// The collectives, in the order given, each once.
pub(crate) fn collectives(list: &[CollectiveArg]) -> Vec<Collective> {
    let mut all = Vec::new();
    for c in list {
        let more: &[Collective] = match c {
            CollectiveArg::AllReduce => &[Collective::AllReduce],
            CollectiveArg::Reduce => &[Collective::Reduce],
            CollectiveArg::Broadcast => &[Collective::Broadcast],
            CollectiveArg::Barrier => &[Collective::Barrier],
            CollectiveArg::ReduceScatter => &[Collective::ReduceScatter],
            CollectiveArg::AllGather => &[Collective::AllGather],
            CollectiveArg::All => &epic_lab::COLLECTIVES,
        };
        for c in more {
            if !all.contains(c) {
                all.push(*c);
            }
        }
    }
    all
}

/// `--dtype` of every subcommand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DtypeArg {
    /// 32-bit integer (also `i32`).
    #[value(alias = "i32")]
    Int32,
    /// IEEE binary32 (also `f32`, `float32`).
    #[value(aliases = ["f32", "float32"])]
    Fp32,
    /// IEEE binary16 (also `f16`, `float16`).
    #[value(aliases = ["f16", "float16"])]
    Fp16,
    /// bfloat16 (also `bfloat16`).
    #[value(alias = "bfloat16")]
    Bf16,
}

impl DtypeArg {
    pub(crate) fn wire(self) -> DataType {
        match self {
            DtypeArg::Int32 => DataType::Int32,
            DtypeArg::Fp32 => DataType::Fp32,
            DtypeArg::Fp16 => DataType::Fp16,
            DtypeArg::Bf16 => DataType::Bf16,
        }
    }
}

/// `--op` of every subcommand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OpArg {
    /// Sum.
    Sum,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

impl OpArg {
    pub(crate) fn wire(self) -> ReduceOp {
        match self {
            OpArg::Sum => ReduceOp::Sum,
            OpArg::Min => ReduceOp::Min,
            OpArg::Max => ReduceOp::Max,
        }
    }
}

/// `--loss-dir`: which directions of a lossy link drop frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LossDir {
    /// Both directions.
    Both,
    /// Toward the root (host → switch, child switch → parent).
    Up,
    /// Away from the root (switch → host, parent → child switch).
    Down,
}

/// `--mtu`: RoCE path MTU, payload bytes per packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum MtuArg {
    /// 256 bytes.
    #[value(name = "256")]
    B256,
    /// 512 bytes.
    #[value(name = "512")]
    B512,
    /// 1024 bytes.
    #[value(name = "1024")]
    B1024,
    /// 2048 bytes.
    #[value(name = "2048")]
    B2048,
    /// 4096 bytes.
    #[value(name = "4096")]
    B4096,
}

impl MtuArg {
    pub(crate) fn mtu(self) -> Mtu {
        match self {
            MtuArg::B256 => Mtu::Mtu256,
            MtuArg::B512 => Mtu::Mtu512,
            MtuArg::B1024 => Mtu::Mtu1024,
            MtuArg::B2048 => Mtu::Mtu2048,
            MtuArg::B4096 => Mtu::Mtu4096,
        }
    }
}

/// `--qps`: how ranks keep their QPs at the group's PSNs. [CTL-040] [CTL-050]
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum QpsArg {
    /// One QP per rank, resynced to the group PSN after every invocation.
    Resync,
    /// One QP per rank and one context per switch for each of the 2K + 1
    /// traffic patterns; PSNs never move (what a verbs NIC needs).
    PerPattern,
}

/// `--transport`: the ranks' RC transport profile. [SR-010]
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TransportArg {
    /// rxe's go-back-N with its fixed timers (what a verbs NIC runs).
    #[value(alias = "go-back-n")]
    Gbn,
    /// Selective retransmission with SACKs and measured timers (EPIC
    /// endpoints only).
    #[value(alias = "selective")]
    Sr,
}

impl TransportArg {
    /// The QP attribute.
    pub(crate) fn transport(self) -> epic_proto::roce::Transport {
        match self {
            TransportArg::Gbn => epic_proto::roce::Transport::Gbn,
            TransportArg::Sr => epic_proto::roce::Transport::SR,
        }
    }
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// An aligned table (`text` is another name for it).
    #[value(alias = "text")]
    Table,
    /// JSON Lines: one object per (mode, collective, size).
    Json,
}

pub(crate) fn parse_topology(s: &str) -> Result<TreeSpec, String> {
    s.parse::<TreeSpec>().map_err(|e| e.to_string())
}

fn parse_f64(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("{s:?} is not a finite number"))
    }
}

pub(crate) fn parse_probability(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not a probability in [0, 1] (5 % is 0.05)"))
    }
}

pub(crate) fn parse_gbps(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    // At least 1 bit/s, at most 100 Tbit/s.
    if (1e-9..=100_000.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} Gbit/s is outside (0, 100000]"))
    }
}

pub(crate) fn parse_latency_us(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if (0.0..=1e9).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} µs is outside [0, 1e9]"))
    }
}

/// `4096`, `4K`, `4KiB`, `64M`, `1G` (powers of 1024), case-insensitive.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'k')) => (t.get(..i), 10),
        Some((i, 'm')) => (t.get(..i), 20),
        Some((i, 'g')) => (t.get(..i), 30),
        _ => (Some(t), 0),
    };
    let bad = || format!("{s:?} is not a size like 4096, 4K, 64M or 1G");
    let n: u64 = digits.ok_or_else(bad)?.parse().map_err(|_| bad())?;
    let bytes = n
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))?;
    if bytes == 0 {
        return Err(format!("{s:?}: a size must be at least one element"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("4kib").unwrap(), 4096);
        assert_eq!(parse_size("64M").unwrap(), 64 << 20);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("2KB").unwrap(), 2048);
        for bad in ["", "K", "4X", "-4K", "0", "1.5M", "99999999999999999G"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn probabilities_parse() {
        assert_eq!(parse_probability("0.05").unwrap(), 0.05);
        for bad in ["5", "-0.1", "nan", "inf", "x"] {
            assert!(parse_probability(bad).is_err(), "{bad}");
        }
    }
}
