//! The value types and parsers of the arguments of `epic sim` and `epic lab`.

use epic_proto::engine::Mode;
use epic_proto::roce::Mtu;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use epic_topology::TreeSpec;

/// `--mode`.
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
    /// All three.
    All,
}

impl ModeArg {
    pub(crate) fn modes(self) -> &'static [Mode] {
        match self {
            ModeArg::One => &[Mode::Terminated],
            ModeArg::Two => &[Mode::Translated],
            ModeArg::Three => &[Mode::Augmented],
            ModeArg::All => &[Mode::Terminated, Mode::Translated, Mode::Augmented],
        }
    }
}

/// `--collective`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CollectiveArg {
    /// AllReduce.
    #[value(name = "all_reduce", alias = "allreduce")]
    AllReduce,
    /// Reduce to `--root`.
    Reduce,
    /// Broadcast from `--root`.
    Broadcast,
    /// Barrier (sizes ignored; reports operations per second).
    Barrier,
    /// ReduceScatter; the size is a rank's whole input (K blocks).
    #[value(name = "reduce_scatter", alias = "reducescatter")]
    ReduceScatter,
    /// AllGather; the size is the gathered output (K blocks).
    #[value(name = "all_gather", alias = "allgather")]
    AllGather,
    /// All six, in the order above.
    All,
}

impl CollectiveArg {
    pub(crate) fn collectives(self) -> &'static [Collective] {
        match self {
            CollectiveArg::AllReduce => &[Collective::AllReduce],
            CollectiveArg::Reduce => &[Collective::Reduce],
            CollectiveArg::Broadcast => &[Collective::Broadcast],
            CollectiveArg::Barrier => &[Collective::Barrier],
            CollectiveArg::ReduceScatter => &[Collective::ReduceScatter],
            CollectiveArg::AllGather => &[Collective::AllGather],
            CollectiveArg::All => &epic_lab::COLLECTIVES,
        }
    }
}

/// `--dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DtypeArg {
    /// 32-bit integer.
    Int32,
    /// IEEE binary32.
    Fp32,
    /// IEEE binary16.
    Fp16,
    /// bfloat16.
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

/// `--op`.
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
