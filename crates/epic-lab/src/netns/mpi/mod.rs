//! The OpenMPI baseline of `epic lab --netns`: `bench/mpi/epic_mpi_bench.c`
//! run with one MPI rank per host namespace, its TCP traffic routed
//! through the switch namespaces like the lab's own.
//!
//! How the ranks get into their namespaces (found by experiment with
//! Debian's OpenMPI 4.1 and its external PMIx 4):
//!
//! - An MPMD launch (`mpirun -np 1 ip netns exec h0 bench : ...`) cannot
//!   work: every rank must reach its local PMIx server, which listens on
//!   127.0.0.1 of mpirun's namespace only.
//! - So each host namespace is a "node" with its own ORTE daemon: mpirun
//!   runs in the first host namespace with `--host ip0,ip1,..` (one slot
//!   each, so rank r runs on host r) and starts the other daemons through
//!   a generated rsh agent ([`launch::write_agent`]) that runs the daemon's
//!   command line under `ip netns exec`. Daemons and ranks talk over the
//!   routed network (`oob_tcp_if_include`/`btl_tcp_if_include` = the
//!   host interface); `btl tcp,self` with `pml ob1` leaves no shared-memory
//!   path between ranks.
//! - All namespaces share /tmp and the host name, so the daemons would
//!   share one session directory and remove it under each other; the agent
//!   gives each namespace its own `TMPDIR`.
//! - Busy-polling ranks starve the kernel's packet forwarding (ksoftirqd)
//!   on a small machine: a 4 KiB AllReduce took 8 ms instead of 0.1 ms, so
//!   ranks yield when idle (`mpi_yield_when_idle 1`, `--bind-to none`).
//! - Daemons daemonize and ranks get their own process groups, so killing
//!   mpirun's group is not enough: every process of a run carries a marker
//!   in its environment and is swept by it ([`launch`]).

mod launch;
mod output;
#[cfg(test)]
mod tests;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use epic_proto::wire::Collective;

/// Where the MPI ranks run: rank r in network namespace `namespaces[r]`,
/// reachable at `ips[r]` on interface `iface` (the same interface name in
/// every host namespace).
#[derive(Debug, Clone)]
pub(crate) struct MpiHosts {
    pub(crate) namespaces: Vec<String>,
    pub(crate) ips: Vec<Ipv4Addr>,
    pub(crate) iface: String,
}

/// What to run: every collective at every size (Barrier once), FP32 sums.
#[derive(Debug, Clone)]
pub(crate) struct MpiRequest {
    pub(crate) collectives: Vec<Collective>,
    /// Bytes of one rank's vector, as the lab's `--sizes` (ReduceScatter:
    /// the whole input; AllGather: the whole gathered output).
    pub(crate) sizes: Vec<u64>,
    pub(crate) iters: u32,
    pub(crate) warmup: u32,
    pub(crate) root: u16,
    /// For the whole mpirun, start to exit.
    pub(crate) timeout: Duration,
}

/// One measured (collective, size).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MpiResult {
    pub(crate) collective: Collective,
    /// As the lab's `Row::bytes`: the vector actually used (sizes are
    /// rounded to whole elements, and to a multiple of the rank count for
    /// ReduceScatter and AllGather); 0 for Barrier.
    pub(crate) bytes: u64,
    /// Latency quantiles (nearest rank) of the measured iterations; an
    /// iteration runs from the first rank's start to the last rank's
    /// completion.
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) iters: u32,
    /// Every rank's output matched the exact expected values.
    pub(crate) correct: bool,
}

/// Why the MPI baseline could not run (a wrong output is not an error:
/// its result says `correct: false`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MpiError {
    /// `mpicc` or `mpirun` is not on `PATH`.
    #[error("{tool} not found: install OpenMPI (apt-get install openmpi-bin libopenmpi-dev)")]
    NotInstalled {
        /// The command.
        tool: &'static str,
    },
    /// The request or the hosts cannot be run.
    #[error("invalid MPI run: {0}")]
    Invalid(#[from] InvalidMpiRun),
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// The operation, with its path or command.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `mpicc` rejected the benchmark.
    #[error("mpicc failed ({status}):\n{stderr}")]
    CompileFailed {
        /// Its exit status.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// mpirun exited unsuccessfully.
    #[error("mpirun failed ({status}); last lines of its stderr:\n{stderr_tail}")]
    MpirunFailed {
        /// Its exit status.
        status: String,
        /// The last lines it printed on stderr.
        stderr_tail: String,
    },
    /// mpirun did not finish in time; the run was killed.
    #[error(
        "mpirun timed out after {after:?} and was killed; last lines of its stderr:\n{stderr_tail}"
    )]
    TimedOut {
        /// How long it was given.
        after: Duration,
        /// The last lines it printed on stderr.
        stderr_tail: String,
    },
    /// The benchmark printed something that is not a result line.
    #[error("bad output line from the MPI benchmark ({reason}): {line}")]
    BadOutput {
        /// The line.
        line: String,
        /// Why it is not a result line.
        reason: String,
    },
    /// The benchmark printed fewer or more results than requested.
    #[error("the MPI benchmark printed {got} results, expected {expected}")]
    MissingResults {
        /// Results requested.
        expected: usize,
        /// Results printed.
        got: usize,
    },
}

/// Why an MPI run's request or hosts cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidMpiRun {
    /// No namespaces, or not one address per namespace.
    #[error("{namespaces} namespaces but {addresses} addresses")]
    Hosts {
        /// Namespaces given.
        namespaces: usize,
        /// Addresses given.
        addresses: usize,
    },
    /// A namespace name that is not plain.
    #[error("namespace name {0:?}")]
    Namespace(String),
    /// An interface name that is not plain.
    #[error("interface name {0:?}")]
    Interface(String),
    /// Two ranks share an address.
    #[error("two ranks share an address")]
    SharedAddress,
    /// The root is not a rank.
    #[error("root {root} of {ranks} ranks")]
    Root {
        /// The root.
        root: u16,
        /// Ranks in the run.
        ranks: usize,
    },
    /// Nothing to run.
    #[error("no iterations or no collectives")]
    Nothing,
    /// A collective the benchmark does not run.
    #[error("unknown collective")]
    UnknownCollective,
    /// Sized collectives without sizes.
    #[error("no sizes")]
    NoSizes,
    /// A size above 4 GiB.
    #[error("sizes above 4 GiB")]
    TooLarge,
    /// A temporary directory whose path a shell would split.
    #[error("temporary directory {0:?}")]
    TempDir(String),
}

impl MpiError {
    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> MpiError {
        let what = what.into();
        move |source| MpiError::Io { what, source }
    }
}

/// `bench/mpi/epic_mpi_bench.c`, built into the binary so that an
/// installed `epic` builds the same benchmark.
const BENCH_SOURCE: &str = include_str!("../../../../../bench/mpi/epic_mpi_bench.c");

/// Writes `bench/mpi/epic_mpi_bench.c` into `out_dir` and compiles it with
/// `mpicc -O2`; returns the binary's path.
pub(crate) fn build_bench(out_dir: &Path) -> Result<PathBuf, MpiError> {
    let mpicc = launch::find_in_path("mpicc").ok_or(MpiError::NotInstalled { tool: "mpicc" })?;
    std::fs::create_dir_all(out_dir)
        .map_err(MpiError::io(format!("creating {}", out_dir.display())))?;
    let src = out_dir.join("epic_mpi_bench.c");
    std::fs::write(&src, BENCH_SOURCE)
        .map_err(MpiError::io(format!("writing {}", src.display())))?;
    let bin = out_dir.join("epic_mpi_bench");
    let out = Command::new(mpicc)
        .args(["-std=c99", "-O2", "-Wall", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .map_err(MpiError::io("running mpicc"))?;
    if !out.status.success() {
        return Err(MpiError::CompileFailed {
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(bin)
}

/// The benchmark's name of `c`.
fn bench_name(c: Collective) -> Option<&'static str> {
    match c {
        Collective::AllReduce => Some("allreduce"),
        Collective::Reduce => Some("reduce"),
        Collective::Broadcast => Some("broadcast"),
        Collective::Barrier => Some("barrier"),
        Collective::ReduceScatter => Some("reducescatter"),
        Collective::AllGather => Some("allgather"),
        Collective::Unknown(_) => None,
    }
}

/// A name that can go into a shell script and a command line unquoted.
fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn validate(hosts: &MpiHosts, req: &MpiRequest) -> Result<(), MpiError> {
    let bad = |m: InvalidMpiRun| Err(MpiError::Invalid(m));
    let n = hosts.namespaces.len();
    if n == 0 || n != hosts.ips.len() {
        return bad(InvalidMpiRun::Hosts {
            namespaces: n,
            addresses: hosts.ips.len(),
        });
    }
    if let Some(ns) = hosts.namespaces.iter().find(|ns| !plain_name(ns)) {
        return bad(InvalidMpiRun::Namespace(ns.clone()));
    }
    if !plain_name(&hosts.iface) {
        return bad(InvalidMpiRun::Interface(hosts.iface.clone()));
    }
    let mut ips = hosts.ips.clone();
    ips.sort_unstable();
    ips.dedup();
    if ips.len() != n {
        return bad(InvalidMpiRun::SharedAddress);
    }
    if usize::from(req.root) >= n {
        return bad(InvalidMpiRun::Root {
            root: req.root,
            ranks: n,
        });
    }
    if req.iters == 0 || req.collectives.is_empty() {
        return bad(InvalidMpiRun::Nothing);
    }
    if req.collectives.iter().any(|c| bench_name(*c).is_none()) {
        return bad(InvalidMpiRun::UnknownCollective);
    }
    let sized = req.collectives.iter().any(|c| *c != Collective::Barrier);
    if sized && req.sizes.is_empty() {
        return bad(InvalidMpiRun::NoSizes);
    }
    if req.sizes.iter().any(|&b| b > 1 << 32) {
        return bad(InvalidMpiRun::TooLarge);
    }
    Ok(())
}

/// The arguments of the benchmark for `req`.
fn bench_args(req: &MpiRequest) -> Vec<String> {
    let names: Vec<&str> = req
        .collectives
        .iter()
        .filter_map(|c| bench_name(*c))
        .collect();
    let sizes: Vec<String> = req.sizes.iter().map(u64::to_string).collect();
    let mut args = vec!["--collective".to_string(), names.join(",")];
    if !sizes.is_empty() {
        args.extend(["--sizes".to_string(), sizes.join(",")]);
    }
    args.extend([
        "--iters".to_string(),
        req.iters.to_string(),
        "--warmup".to_string(),
        req.warmup.to_string(),
        "--root".to_string(),
        req.root.to_string(),
    ]);
    args
}

/// The mpirun arguments (after `mpirun`) that run `bench` on `hosts`, the
/// daemons started through `agent`.
fn mpirun_args(bench: &Path, hosts: &MpiHosts, agent: &Path) -> Vec<String> {
    let host_list: Vec<String> = hosts.ips.iter().map(|ip| format!("{ip}:1")).collect();
    let mut args: Vec<String> = [
        "--allow-run-as-root",
        "--host",
        &host_list.join(","),
        "-np",
        &hosts.ips.len().to_string(),
        "--map-by",
        "slot",
        "--bind-to",
        "none",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    let mca = [
        ("plm_rsh_agent", agent.display().to_string()),
        ("plm_rsh_no_tree_spawn", "1".to_string()),
        ("pml", "ob1".to_string()),
        ("btl", "tcp,self".to_string()),
        ("btl_tcp_if_include", hosts.iface.clone()),
        ("oob_tcp_if_include", hosts.iface.clone()),
        ("mpi_yield_when_idle", "1".to_string()),
    ];
    for (k, v) in mca {
        args.extend(["--mca".to_string(), k.to_string(), v]);
    }
    args.push(bench.display().to_string());
    args
}

/// Runs `bench` with one rank per host namespace; returns one result per
/// (collective, size), in request order.
pub(crate) fn run_mpi(
    bench: &Path,
    hosts: &MpiHosts,
    req: &MpiRequest,
) -> Result<Vec<MpiResult>, MpiError> {
    validate(hosts, req)?;
    let mpirun = launch::find_in_path("mpirun").ok_or(MpiError::NotInstalled { tool: "mpirun" })?;
    let bench = std::fs::canonicalize(bench)
        .map_err(MpiError::io(format!("finding {}", bench.display())))?;
    let work = launch::WorkDir::create()?;
    let agent = launch::write_agent(&work, hosts)?;
    let first = hosts.namespaces.first().map_or("", String::as_str);
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", first])
        .arg(&mpirun)
        .args(mpirun_args(&bench, hosts, &agent))
        .args(bench_args(req))
        .env("TMPDIR", work.tmpdir(first)?)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let out = launch::run(cmd, &work, req.timeout)?;
    if !out.status.success() {
        return Err(MpiError::MpirunFailed {
            status: out.status.to_string(),
            stderr_tail: launch::tail(&out.stderr, 20),
        });
    }
    let results = output::parse(&out.stdout, hosts.ips.len())?;
    let expected = req
        .collectives
        .iter()
        .map(|c| match c {
            Collective::Barrier => 1,
            _ => req.sizes.len(),
        })
        .sum();
    if results.len() != expected {
        return Err(MpiError::MissingResults {
            expected,
            got: results.len(),
        });
    }
    Ok(results)
}
