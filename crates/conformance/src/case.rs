//! The case format: one TOML file per case (`case.toml`), beside the
//! stimulus pcaps the reference run fed the device under test. [CONF-001]
//!
//! A case names a tree, the switch the device under test (DUT) plays, the
//! mode, one collective call, the DUT's capabilities, the faults the
//! harness applies on the DUT's links, the malformed frames it injects,
//! and what the oracle expects. Every other node of the tree is played by
//! the reference implementation, reacting to what the DUT sends.

use std::fmt;
use std::path::Path;

use epic_proto::engine::Mode;
use epic_proto::roce::Mtu;
use epic_proto::wire::{Collective, DataType, ReduceOp};
use epic_topology::{IncTree, TreeSpec};
use serde::{Deserialize, Serialize};

/// One conformance case. [CONF-001]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique name: `m<mode>-<family>-…`, lowercase, `-` separated.
    pub name: String,
    /// The family the case belongs to.
    pub family: Family,
    /// One sentence: what the case does to the DUT.
    pub description: String,
    /// The requirement IDs the case is about (besides those every check
    /// cites).
    #[serde(default)]
    pub requirements: Vec<String>,
    /// `tree-H-D`.
    pub topology: String,
    /// The switch the DUT plays.
    pub dut: DutRole,
    /// 1, 2 or 3.
    pub mode: u8,
    /// The call.
    pub call: Call,
    /// Transport parameters of the whole tree.
    #[serde(default)]
    pub transport: Transport,
    /// Overrides of the DUT's limits (its "SRAM"); none: the suite's
    /// defaults.
    #[serde(default, skip_serializing_if = "Capabilities::is_default")]
    pub capabilities: Capabilities,
    /// Faults on the DUT's links, applied by the harness.
    #[serde(default, rename = "fault", skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
    /// Malformed or hostile frames the harness sends the DUT.
    #[serde(default, rename = "inject", skip_serializing_if = "Vec::is_empty")]
    pub injections: Vec<Injection>,
    /// The group's context in a block shared with a second tenant the
    /// harness plays (temporal multiplexing); none: a block of its own.
    /// [TMX-001]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<crate::tmx::SharedBlock>,
    /// What a conforming DUT does.
    #[serde(default)]
    pub expect: Expect,
}

/// Case families (`docs/CONFORMANCE.md` lists what each checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// No faults.
    Clean,
    /// One frame lost on one hop of the DUT, in one direction.
    Loss,
    /// One frame delayed behind the next.
    Reorder,
    /// One frame delivered twice.
    Duplicate,
    /// A control message or echo lost, duplicated or late.
    Control,
    /// A data packet with a PSN outside the window or the invocation.
    OutOfWindow,
    /// The call's PSNs cross 2^24.
    Wraparound,
    /// Truncated, bad checksums, unknown opcode, wrong QP, spoofed source.
    Malformed,
    /// A context that does not fit the DUT's limits.
    Install,
    /// Selective retransmission: SACKs at the switch, and a go-back-N-only
    /// device refusing an SR group. [SR-030]…[SR-036]
    Sr,
    /// A block shared with a second tenant: acquire, deny, release, a
    /// late duplicate release, data without the block. [TMX-010]…[TMX-013]
    Shared,
    /// A random scenario found by `epic conformance explore`.
    Explored,
}

impl Family {
    /// Every family, in report order.
    pub const ALL: [Family; 12] = [
        Family::Clean,
        Family::Loss,
        Family::Reorder,
        Family::Duplicate,
        Family::Control,
        Family::OutOfWindow,
        Family::Wraparound,
        Family::Malformed,
        Family::Install,
        Family::Sr,
        Family::Shared,
        Family::Explored,
    ];

    /// The snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            Family::Clean => "clean",
            Family::Loss => "loss",
            Family::Reorder => "reorder",
            Family::Duplicate => "duplicate",
            Family::Control => "control",
            Family::OutOfWindow => "out_of_window",
            Family::Wraparound => "wraparound",
            Family::Malformed => "malformed",
            Family::Install => "install",
            Family::Sr => "sr",
            Family::Shared => "shared",
            Family::Explored => "explored",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which switch of the tree the DUT plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DutRole {
    /// The root switch (switch 0).
    Root,
    /// The first switch of level 1 in a tree of depth ≥ 4 (neither root
    /// nor leaf).
    Spine,
    /// The last switch (a leaf: ranks on its child ports).
    Leaf,
}

impl DutRole {
    /// The switch index in `tree` (breadth-first), or `None` when the tree
    /// has no such switch.
    pub fn switch(self, tree: &IncTree) -> Option<usize> {
        let n = tree.switches.len();
        let leaves = tree
            .switches
            .iter()
            .filter(|s| s.level + 2 == tree.spec.depth);
        match self {
            DutRole::Root => Some(0),
            DutRole::Leaf => leaves.map(|s| s.index).next_back().filter(|&i| i < n),
            DutRole::Spine => tree
                .switches
                .iter()
                .find(|s| s.level == 1 && s.level + 2 < tree.spec.depth)
                .map(|s| s.index),
        }
    }

    /// The snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            DutRole::Root => "root",
            DutRole::Spine => "spine",
            DutRole::Leaf => "leaf",
        }
    }
}

/// The collective call every rank makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// The collective.
    pub collective: CollectiveName,
    /// Element type.
    #[serde(default = "default_dtype")]
    pub dtype: DtypeName,
    /// Reduce op (ignored by collectives that do not reduce).
    #[serde(default = "default_op")]
    pub op: OpName,
    /// Elements of one rank's vector (ReduceScatter and AllGather: a
    /// multiple of the ranks).
    pub elements: u64,
    /// The root rank of Reduce and Broadcast.
    #[serde(default)]
    pub root: u16,
    /// Reproducible reduction (flag bit 0).
    #[serde(default = "yes")]
    pub reproducible: bool,
}

fn default_dtype() -> DtypeName {
    DtypeName::Int32
}

fn default_op() -> OpName {
    OpName::Sum
}

fn yes() -> bool {
    true
}

/// Collective names in case files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveName {
    /// AllReduce.
    Allreduce,
    /// Reduce.
    Reduce,
    /// Broadcast.
    Broadcast,
    /// Barrier.
    Barrier,
    /// ReduceScatter.
    ReduceScatter,
    /// AllGather.
    Allgather,
}

impl CollectiveName {
    /// All six.
    pub const ALL: [CollectiveName; 6] = [
        CollectiveName::Allreduce,
        CollectiveName::Reduce,
        CollectiveName::Broadcast,
        CollectiveName::Barrier,
        CollectiveName::ReduceScatter,
        CollectiveName::Allgather,
    ];

    /// The wire collective.
    pub fn wire(self) -> Collective {
        match self {
            CollectiveName::Allreduce => Collective::AllReduce,
            CollectiveName::Reduce => Collective::Reduce,
            CollectiveName::Broadcast => Collective::Broadcast,
            CollectiveName::Barrier => Collective::Barrier,
            CollectiveName::ReduceScatter => Collective::ReduceScatter,
            CollectiveName::Allgather => Collective::AllGather,
        }
    }

    /// The name in case names.
    pub fn name(self) -> &'static str {
        match self {
            CollectiveName::Allreduce => "allreduce",
            CollectiveName::Reduce => "reduce",
            CollectiveName::Broadcast => "broadcast",
            CollectiveName::Barrier => "barrier",
            CollectiveName::ReduceScatter => "reduce-scatter",
            CollectiveName::Allgather => "allgather",
        }
    }
}

/// Element type names in case files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DtypeName {
    /// INT32.
    Int32,
    /// FP32.
    Fp32,
    /// FP16.
    Fp16,
    /// BF16.
    Bf16,
}

impl DtypeName {
    /// The wire type.
    pub fn wire(self) -> DataType {
        match self {
            DtypeName::Int32 => DataType::Int32,
            DtypeName::Fp32 => DataType::Fp32,
            DtypeName::Fp16 => DataType::Fp16,
            DtypeName::Bf16 => DataType::Bf16,
        }
    }
}

/// Reduce op names in case files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpName {
    /// Sum.
    Sum,
    /// Min.
    Min,
    /// Max.
    Max,
}

impl OpName {
    /// The wire op.
    pub fn wire(self) -> ReduceOp {
        match self {
            OpName::Sum => ReduceOp::Sum,
            OpName::Min => ReduceOp::Min,
            OpName::Max => ReduceOp::Max,
        }
    }
}

/// Transport parameters shared by every node of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Transport {
    /// RoCE path MTU in bytes (256 … 4096).
    pub mtu: u32,
    /// M: packets per message.
    pub message_packets: u32,
    /// W: messages in flight per rank.
    pub window: u32,
    /// N: slots per pipe (Mode I: message buffers per edge); 0 derives it
    /// from M and W as the reference does.
    pub slots: u32,
    /// The group PSN every QP and context starts at.
    pub start_psn: u32,
    /// Seed of the links' fault generators.
    pub seed: u64,
    /// Probability that any frame on any link of the tree is lost (the
    /// reference links; 0 for scheduled faults only).
    pub link_loss: f64,
    /// Modes II and III: the per-pattern profile (2K + 1 groups, one QP
    /// per pattern, PSNs never resynced) instead of one resynced group.
    /// [CTL-050]
    pub per_pattern: bool,
    /// The loss-recovery profile of the ranks' QPs and the DUT's
    /// contexts: go-back-N (the default) or selective retransmission
    /// (Modes II and III). [SR-010] [SR-036] [SR-050]
    #[serde(skip_serializing_if = "Profile::is_gbn")]
    pub profile: Profile,
}

/// A group's transport profile in case files. [SR-010]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// Go-back-N, as rxe and every verbs NIC run it.
    #[default]
    Gbn,
    /// Selective retransmission: SACKs and selective resends (SPEC §17.5,
    /// §17.7).
    Sr,
}

impl Profile {
    /// Whether this is go-back-N (the default, left out of case files).
    pub fn is_gbn(&self) -> bool {
        *self == Profile::Gbn
    }

    /// The ranks' QP transport.
    pub fn qp_transport(self) -> epic_proto::roce::Transport {
        match self {
            Profile::Gbn => epic_proto::roce::Transport::Gbn,
            Profile::Sr => epic_proto::roce::Transport::Sr(epic_proto::roce::SrConfig::default()),
        }
    }

    /// The snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Gbn => "gbn",
            Profile::Sr => "sr",
        }
    }
}

impl Default for Transport {
    fn default() -> Transport {
        Transport {
            mtu: 1024,
            message_packets: 2,
            window: 4,
            slots: 0,
            start_psn: 0,
            seed: 1,
            link_loss: 0.0,
            per_pattern: false,
            profile: Profile::Gbn,
        }
    }
}

/// Limits the harness configures the DUT with. [CONF-002]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Bytes of context memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arena_bytes: Option<usize>,
    /// Contexts at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_contexts: Option<usize>,
    /// Lookup-table entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_endpoints: Option<usize>,
    /// Largest group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_group_size: Option<u16>,
    /// Whether the DUT runs the selective-retransmission profile; `false`
    /// makes it a go-back-N-only device, which must refuse an SR group's
    /// configuration with the typed refusal of [SR-036]. None: the
    /// adapter's own answer (the reference runs SR; `exec:` and `iface:`
    /// cannot be told the profile in v1 and announce go-back-N only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selective_retransmission: Option<bool>,
}

impl Capabilities {
    /// Whether nothing is overridden.
    pub fn is_default(&self) -> bool {
        *self == Capabilities::default()
    }
}

/// Which side of a DUT link a fault or capture is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Toward the DUT.
    In,
    /// From the DUT.
    Out,
}

/// What kind of frame a fault or injection picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameClass {
    /// A data packet (RC SEND/WRITE carrying payload, not a control message).
    Data,
    /// An EPIC control message (or its echo).
    Control,
    /// A positive acknowledgement.
    Ack,
    /// A NAK (sequence, RNR or fatal).
    Nak,
    /// A SACK ([WIRE-052]).
    Sack,
    /// Any frame.
    Any,
}

/// What the harness does to the picked frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultAction {
    /// Never delivered.
    Drop,
    /// Delivered twice in a row.
    Duplicate,
    /// Delivered after the next frame of the same port and direction (or
    /// after 20 µs if none comes).
    Delay,
}

/// A scheduled fault on one DUT link. [CONF-003]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// The DUT port.
    pub port: u16,
    /// Toward or from the DUT.
    pub direction: Direction,
    /// The kind of frame counted.
    pub class: FrameClass,
    /// Which one (0: the first of its class on that port and direction).
    pub nth: u32,
    /// What happens to it.
    pub action: FaultAction,
}

/// How an injected copy is spoiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Corruption {
    /// Cut in the middle of the transport headers.
    Truncated,
    /// Payload changed, ICRC left stale.
    BadIcrc,
    /// Payload changed, ICRC recomputed, IPv4 checksum wrong.
    BadIpv4Checksum,
    /// An opcode no RC transport defines, checksums valid.
    UnknownOpcode,
    /// A destination QP the DUT has no endpoint for.
    WrongQp,
    /// An IPv4 (and MAC) source that is not the endpoint's peer.
    SpoofedSource,
    /// The PSN moved N slots ahead: beyond a Mode III pipe's range.
    PsnBeyondWindow,
    /// The PSN moved 2^22 ahead: outside every invocation.
    PsnOutsideInvocation,
    /// A SEND Only with immediate data that is not the EPIC tag, at the
    /// PSN after the genuine frame's, delivered just after it: not an
    /// EPIC control, which a Mode I DUT must refuse. [M1-041]
    ForeignImmediate,
    /// A SEND Only at the PSN after the genuine frame's, delivered just
    /// after it: after a rank's last data packet, a message past the
    /// count of its invocation, which a Mode I DUT must refuse. [M1-041]
    DataPastInvocation,
}

impl Corruption {
    /// All of them.
    pub const ALL: [Corruption; 10] = [
        Corruption::Truncated,
        Corruption::BadIcrc,
        Corruption::BadIpv4Checksum,
        Corruption::UnknownOpcode,
        Corruption::WrongQp,
        Corruption::SpoofedSource,
        Corruption::PsnBeyondWindow,
        Corruption::PsnOutsideInvocation,
        Corruption::ForeignImmediate,
        Corruption::DataPastInvocation,
    ];

    /// Whether the copy is a request of its own at the PSN after the
    /// genuine frame's, delivered just after it (not a spoiled copy before
    /// it), which a Mode I DUT must refuse with NAK invalid request and
    /// never acknowledge. [M1-041]
    pub fn follows_genuine(self) -> bool {
        matches!(
            self,
            Corruption::ForeignImmediate | Corruption::DataPastInvocation
        )
    }

    /// The snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            Corruption::Truncated => "truncated",
            Corruption::BadIcrc => "bad_icrc",
            Corruption::BadIpv4Checksum => "bad_ipv4_checksum",
            Corruption::UnknownOpcode => "unknown_opcode",
            Corruption::WrongQp => "wrong_qp",
            Corruption::SpoofedSource => "spoofed_source",
            Corruption::PsnBeyondWindow => "psn_beyond_window",
            Corruption::PsnOutsideInvocation => "psn_outside_invocation",
            Corruption::ForeignImmediate => "foreign_immediate",
            Corruption::DataPastInvocation => "data_past_invocation",
        }
    }
}

/// A spoiled copy of a genuine frame, delivered to the DUT just before the
/// genuine one. Its payload differs, so a DUT that takes it in computes a
/// wrong result. The kinds that [follow](Corruption::follows_genuine) the
/// genuine frame come just after it instead, at the PSN after its.
/// [CONF-004]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Injection {
    /// The DUT port.
    pub port: u16,
    /// The class of the genuine frame copied.
    pub class: FrameClass,
    /// Which one (0-based, counted inbound on `port`).
    pub nth: u32,
    /// How the copy is spoiled.
    pub corruption: Corruption,
}

/// What a conforming DUT does with the case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// Installs the context, and every rank completes with the right
    /// result.
    #[default]
    Complete,
    /// Refuses the context at install.
    Refused,
    /// Installs the context and denies the group's acquire: every rank's
    /// call ends denied, having sent no data. [TMX-011]
    Denied,
    /// Installs the context and drops the call's data (the group does not
    /// hold its shared block): the call does not complete. [TMX-012]
    Dropped,
}

/// A case file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// Reading the file.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Not TOML of the case format.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message (names the key and line).
        message: String,
    },
    /// Parsed, but inconsistent.
    #[error("case {name}: {message}")]
    Invalid {
        /// The case.
        name: String,
        /// What is wrong.
        message: String,
    },
}

impl Case {
    /// Parses a case file's text; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<Case, CaseError> {
        let case: Case = toml::from_str(text).map_err(|e| CaseError::Parse {
            path: path.to_string(),
            message: e.to_string(),
        })?;
        case.validate()?;
        Ok(case)
    }

    /// Reads and validates `path`.
    pub fn load(path: &Path) -> Result<Case, CaseError> {
        let text = std::fs::read_to_string(path).map_err(|source| CaseError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Case::parse(&text, &path.display().to_string())
    }

    /// The case as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    fn invalid(&self, message: impl Into<String>) -> CaseError {
        CaseError::Invalid {
            name: self.name.clone(),
            message: message.into(),
        }
    }

    /// The tree.
    pub fn tree(&self) -> Result<IncTree, CaseError> {
        let spec: TreeSpec = self
            .topology
            .parse()
            .map_err(|e: epic_topology::BadTopology| self.invalid(e.to_string()))?;
        IncTree::new(spec).map_err(|e| self.invalid(e.to_string()))
    }

    /// The engine mode.
    pub fn engine_mode(&self) -> Result<Mode, CaseError> {
        match self.mode {
            1 => Ok(Mode::Terminated),
            2 => Ok(Mode::Translated),
            3 => Ok(Mode::Augmented),
            m => Err(self.invalid(format!("mode {m}: expected 1, 2 or 3"))),
        }
    }

    /// The DUT's switch index and its port count.
    pub fn dut_switch(&self) -> Result<(usize, u16), CaseError> {
        let tree = self.tree()?;
        let s = self.dut.switch(&tree).ok_or_else(|| {
            self.invalid(format!(
                "{} has no {} switch",
                self.topology,
                self.dut.name()
            ))
        })?;
        let ports = tree
            .switches
            .get(s)
            .map_or(0, |sw| u16::try_from(sw.ports.len()).unwrap_or(u16::MAX));
        Ok((s, ports))
    }

    /// Checks everything a run relies on.
    pub fn validate(&self) -> Result<(), CaseError> {
        let ok_name = !self.name.is_empty()
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !ok_name {
            return Err(self.invalid("name: use lowercase letters, digits, - and _"));
        }
        let tree = self.tree()?;
        self.engine_mode()?;
        let (_, ports) = self.dut_switch()?;
        let ranks = u64::from(tree.ranks());
        let c = &self.call;
        if usize::from(c.root) >= usize::from(tree.ranks()) {
            return Err(self.invalid(format!("call.root {} is not a rank", c.root)));
        }
        if matches!(
            c.collective,
            CollectiveName::ReduceScatter | CollectiveName::Allgather
        ) && c.elements % ranks != 0
        {
            return Err(self.invalid(format!(
                "call.elements {} is not a multiple of the {ranks} ranks",
                c.elements
            )));
        }
        if c.elements > 1 << 24 {
            return Err(self.invalid("call.elements: at most 2^24"));
        }
        let t = &self.transport;
        if Mtu::from_bytes(t.mtu).is_none() {
            return Err(self.invalid(format!("transport.mtu {}: expected 256 … 4096", t.mtu)));
        }
        if !(1..=64).contains(&t.message_packets) || !(1..=64).contains(&t.window) {
            return Err(self.invalid("transport: message_packets and window in 1 … 64"));
        }
        if t.slots != 0 && (t.slots > 1 << 16 || !t.slots.is_power_of_two()) {
            return Err(self.invalid("transport.slots: 0 or a power of two up to 65536"));
        }
        if t.start_psn >= 1 << 24 {
            return Err(self.invalid("transport.start_psn: below 2^24"));
        }
        if t.per_pattern && self.mode == 1 {
            return Err(self.invalid("transport.per_pattern: Modes II and III only"));
        }
        // Mode I runs go-back-N toward the ranks; Mode II carries SR
        // between the ranks (§17.7), Mode III runs it per hop (§17.11).
        // [SR-030] [SR-041] [SR-050]
        if t.profile == Profile::Sr && self.mode == 1 {
            return Err(self.invalid("transport.profile sr: Modes II and III only"));
        }
        if !(0.0..=0.5).contains(&t.link_loss) {
            return Err(self.invalid("transport.link_loss: in 0 … 0.5"));
        }
        match &self.shared {
            Some(sh) => crate::tmx::validate(self, sh).map_err(|m| self.invalid(m))?,
            None if matches!(self.expect, Expect::Denied | Expect::Dropped) => {
                return Err(self.invalid("expect denied or dropped: only with [shared]"));
            }
            None => {}
        }
        for f in &self.faults {
            if f.port >= ports {
                return Err(self.invalid(format!("fault on port {}: the DUT has {ports}", f.port)));
            }
        }
        for i in &self.injections {
            if i.port >= ports {
                return Err(self.invalid(format!("inject on port {}: the DUT has {ports}", i.port)));
            }
        }
        Ok(())
    }
}
