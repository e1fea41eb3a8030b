//! The [`Dut`] interface every adapter implements, what a DUT is
//! configured with, and the `--dut` argument.

use std::fmt;
use std::path::PathBuf;

use epic_proto::engine::Pitfall;
use incengine::{SwitchConfig, SwitchSpec};
use netsim::Node;

/// A running device under test: a sans-IO machine driven in virtual time
/// through the simulator's [`Node`] calls (frames in, frames pulled out,
/// one timer), which can also fail as an adapter. [CONF-010]
pub trait Dut: Node + fmt::Debug {
    /// Why the adapter stopped working (the process died, the framing
    /// broke); the case is then an error, not a verdict on the DUT.
    fn failure(&self) -> Option<String>;

    /// Data the DUT dropped for a context of a shared block its tenant
    /// did not hold, if the adapter can read its counters (`None`: it
    /// cannot; only frames are judged then). [TMX-012]
    fn not_granted(&self) -> Option<u64> {
        None
    }

    /// Waits until the DUT has answered the frames handed to it so far:
    /// a device reached over several interfaces may read them in another
    /// order than they were sent, so frames that must come first (the
    /// second tenant's acquire before the group's, [TMX-010]) wait for
    /// the DUT's answer before anything else is sent. A DUT behind one
    /// ordered stream needs nothing (the default).
    fn settle(&mut self) {}
}

/// What a DUT is configured with: the switch it plays, as `switch.toml`
/// renders it. [CONF-002]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DutSpec {
    /// The engine (addresses, limits) and the contexts to install.
    pub switch: SwitchSpec,
    /// Ports, in tree order: children first, the parent last.
    pub ports: u16,
    /// The transport profile of every group the contexts serve. [SR-036]
    pub profile: crate::case::Profile,
    /// The case's word on whether the DUT runs SR; `None`: the adapter's
    /// own. [SR-036]
    pub selective_retransmission: Option<bool>,
}

impl DutSpec {
    /// The typed refusal of a device that does not run the spec's
    /// profile, given whether the adapter's device runs SR (`runs_sr`)
    /// unless the case says otherwise. [SR-036]
    pub fn check_profile(&self, runs_sr: bool) -> Result<(), StartError> {
        let runs_sr = self.selective_retransmission.unwrap_or(runs_sr);
        if self.profile == crate::case::Profile::Sr && !runs_sr {
            return Err(StartError::Unsupported(
                "transport profile sr: the device runs go-back-N only".into(),
            ));
        }
        Ok(())
    }
}

impl DutSpec {
    /// The `switch.toml` an external DUT reads: interfaces `port0` … in
    /// port order.
    pub fn to_toml(&self) -> String {
        SwitchConfig {
            spec: self.switch.clone(),
            interfaces: (0..self.ports).map(|p| format!("port{p}")).collect(),
            manager: None,
        }
        .to_toml()
    }
}

/// Why a DUT did not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// The DUT refused its configuration (a verdict: right when the case
    /// expects it).
    Refused(String),
    /// The adapter could not run the DUT at all.
    Failed(String),
    /// The DUT does not run the transport profile asked of it (a typed
    /// refusal: the case is skipped, or passes when it expects exactly
    /// this). [SR-036]
    Unsupported(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Refused(r) => write!(f, "refused its configuration: {r}"),
            StartError::Failed(r) => write!(f, "did not start: {r}"),
            StartError::Unsupported(r) => write!(f, "does not run the profile: {r}"),
        }
    }
}

/// A `--dut` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdapterSpec {
    /// The engine in-process, possibly a mutant.
    Reference {
        /// The deliberately wrong variant, if any.
        mutant: Option<Pitfall>,
    },
    /// A child process; `{config}` in the command is replaced by the
    /// configuration's path.
    Exec {
        /// The command line, run by `sh -c`.
        command: String,
    },
    /// A device on real interfaces: port i is `interfaces[i]`.
    Iface {
        /// The interfaces.
        interfaces: Vec<String>,
        /// The command that configures the device for each case
        /// (`--dut-setup`); required to run.
        setup: Option<String>,
    },
    /// Offline: stimulus pcaps out, output pcaps in.
    Pcap {
        /// One directory per case beneath it.
        dir: PathBuf,
    },
}

/// A `--dut` argument that names no adapter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--dut {given:?}: {why}")]
pub struct AdapterError {
    /// The argument.
    pub given: String,
    /// What is wrong with it.
    pub why: String,
}

impl std::str::FromStr for AdapterSpec {
    type Err = AdapterError;

    fn from_str(s: &str) -> Result<AdapterSpec, AdapterError> {
        let err = |why: &str| AdapterError {
            given: s.to_string(),
            why: why.to_string(),
        };
        let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
        match kind {
            "reference" if rest.is_empty() => Ok(AdapterSpec::Reference { mutant: None }),
            "reference" => {
                let name = rest
                    .strip_prefix("mutant=")
                    .ok_or_else(|| err("expected reference or reference:mutant=NAME"))?;
                let mutant = Pitfall::from_name(name).ok_or_else(|| {
                    err(&format!(
                        "no mutant {name:?} in this build (mutants: {})",
                        mutant_names().join(", ")
                    ))
                })?;
                Ok(AdapterSpec::Reference {
                    mutant: Some(mutant),
                })
            }
            "exec" if !rest.trim().is_empty() => Ok(AdapterSpec::Exec {
                command: rest.to_string(),
            }),
            "exec" => Err(err("exec:CMD needs a command")),
            "iface" => {
                let interfaces: Vec<String> = rest
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                if interfaces.is_empty() {
                    return Err(err("iface: needs interfaces, iface:IF0,IF1,..."));
                }
                Ok(AdapterSpec::Iface {
                    interfaces,
                    setup: None,
                })
            }
            "pcap" if !rest.is_empty() => Ok(AdapterSpec::Pcap {
                dir: PathBuf::from(rest),
            }),
            "pcap" => Err(err("pcap:DIR needs a directory")),
            _ => Err(err(
                "expected reference, reference:mutant=NAME, exec:CMD, iface:IF0,IF1,... or pcap:DIR",
            )),
        }
    }
}

impl fmt::Display for AdapterSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdapterSpec::Reference { mutant: None } => f.write_str("reference"),
            AdapterSpec::Reference { mutant: Some(m) } => {
                write!(f, "reference:mutant={}", m.name())
            }
            AdapterSpec::Exec { command } => write!(f, "exec:{command}"),
            AdapterSpec::Iface { interfaces, .. } => write!(f, "iface:{}", interfaces.join(",")),
            AdapterSpec::Pcap { dir } => write!(f, "pcap:{}", dir.display()),
        }
    }
}

/// The mutants this build carries (none without the `mutants` feature
/// but the one the engine always keeps).
pub fn mutant_names() -> Vec<&'static str> {
    #[cfg(feature = "mutants")]
    let all = Pitfall::mutants();
    #[cfg(not(feature = "mutants"))]
    let all = &[Pitfall::Mode3WithMode2Recycle];
    all.iter().map(|m| m.name()).collect()
}

impl AdapterSpec {
    /// Starts a reactive DUT configured with `spec`. `pcap:` is not
    /// reactive and is refused here.
    pub fn start(&self, spec: &DutSpec) -> Result<Box<dyn Dut>, StartError> {
        // The reference runs SR; `exec:` and `iface:` cannot tell their
        // device the profile (switch.toml v1 has no field for it), so
        // they announce go-back-N only. [SR-036]
        spec.check_profile(matches!(self, AdapterSpec::Reference { .. }))?;
        match self {
            AdapterSpec::Reference { mutant } => {
                Ok(Box::new(super::ReferenceDut::start(spec, *mutant)?))
            }
            AdapterSpec::Exec { command } => Ok(Box::new(super::ExecDut::start(command, spec)?)),
            AdapterSpec::Iface { interfaces, setup } => {
                let setup = setup.clone().ok_or_else(|| {
                    StartError::Failed(
                        "iface: needs --dut-setup CMD to configure the device for each case".into(),
                    )
                })?;
                let spec_i = super::IfaceSpec {
                    interfaces: interfaces.clone(),
                    setup,
                };
                Ok(Box::new(super::IfaceDut::start(&spec_i, spec)?))
            }
            AdapterSpec::Pcap { .. } => Err(StartError::Failed(
                "pcap: is offline; it runs through the pcap driver".into(),
            )),
        }
    }
}

/// Pops the next frame a DUT adapter has queued into `buf`: the shared
/// `poll_transmit` of the adapters that collect a device's frames.
pub(crate) fn pop_frame(
    frames: &mut std::collections::VecDeque<(u16, Vec<u8>)>,
    buf: &mut [u8],
) -> Option<(netsim::PortId, usize)> {
    let (port, f) = frames.pop_front()?;
    let dst = buf.get_mut(..f.len())?;
    dst.copy_from_slice(&f);
    Some((netsim::PortId(port), f.len()))
}
