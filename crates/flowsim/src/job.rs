//! The workload: a 3D-parallel training job, its communication groups
//! and the phases of one iteration. [SIM-015]
//!
//! Ranks are laid out in Megatron-LM's default order, tensor-parallel
//! fastest, then data-parallel, then pipeline: rank = t + TP·(d + DP·s)
//! for tensor rank t, data-parallel rank d and stage s, on host `rank`
//! of the fabric (hosts are numbered leaf by leaf). With TP equal to the
//! hosts of a leaf, each TP group is one leaf; with TP·DP the hosts of a
//! pod, each DP group spans the leaves of one pod and every pipeline
//! boundary crosses pods.
//!
//! An iteration is a 1F1B pipeline of `m` micro-batches on `PP` stages,
//! cut into `m + PP − 1` slots: in slot k, stage s is busy when
//! s ≤ k < s + m and then computes the forward and backward pass of one
//! micro-batch (with its TP AllReduces) and exchanges activations and
//! gradients with its busy neighbours. Then every DP group AllReduces the
//! gradients. Consecutive slots with the same busy stages are merged into
//! one phase with their compute and volumes summed, which the fluid model
//! makes exact (scaling every volume scales every completion time).

use serde::Serialize;

use manager::topology::HostId;

/// What a communication group does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum GroupKind {
    /// Tensor parallel: AllReduce of activations inside every layer.
    Tp,
    /// Data parallel: AllReduce of the gradients once per iteration.
    Dp,
}

impl GroupKind {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            GroupKind::Tp => "tp",
            GroupKind::Dp => "dp",
        }
    }
}

/// A collective communication group of the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommGroup {
    /// Its name (the InitGroup name).
    pub name: String,
    /// TP or DP.
    pub kind: GroupKind,
    /// Member hosts in rank (ring) order.
    pub hosts: Vec<HostId>,
    /// It runs over the servers' scale-up fabric (NVLink), not the
    /// fat-tree, and never asks for INC.
    pub scaleup: bool,
}

/// One transfer of a phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Transfer {
    /// An AllReduce of `bytes` per rank on group `group` (index into
    /// [`Job::groups`]).
    AllReduce {
        /// The group.
        group: usize,
        /// Bytes of each rank's vector.
        bytes: f64,
    },
    /// A point-to-point send (pipeline activations or gradients).
    Send {
        /// Sender.
        from: HostId,
        /// Receiver.
        to: HostId,
        /// Bytes.
        bytes: f64,
    },
}

/// One bulk-synchronous phase: every busy rank computes, then the
/// transfers run together; the phase ends with the last of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    /// Pipeline slots merged into it (0 for the DP phase).
    pub slots: u32,
    /// Compute time before the transfers, seconds.
    pub compute_s: f64,
    /// The transfers.
    pub transfers: Vec<Transfer>,
}

/// The model and parallelism of a training job, and the assumptions that
/// turn them into compute times and volumes. [SIM-015]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobSpec {
    /// Model name.
    pub model: String,
    /// Transformer layers.
    pub layers: u32,
    /// Hidden size.
    pub hidden: u64,
    /// Tokens per sequence.
    pub seq_len: u64,
    /// Parameters.
    pub params: f64,
    /// Sequences per iteration (all replicas).
    pub global_batch: u32,
    /// Sequences per micro-batch.
    pub micro_batch: u32,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
    /// Data-parallel degree.
    pub dp: u32,
    /// Sustained FLOP/s of one GPU.
    pub gpu_flops: f64,
    /// Bytes per activation element (bf16).
    pub act_bytes: u32,
    /// Bytes per gradient element in the DP AllReduce (fp32).
    pub grad_bytes: u32,
    /// Scale-up bandwidth per GPU, Gbit/s, when a server's GPUs (a TP
    /// group) talk over NVLink instead of the fat-tree; `None`: one GPU
    /// per NIC, every byte on the fat-tree (the paper's Table 36).
    pub scaleup_gbps: Option<f64>,
}

/// A job spec that cannot run on the fabric.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// A degree, size or rate is zero.
    #[error("{0} must be positive")]
    Zero(&'static str),
    /// TP·PP·DP is not the number of hosts.
    #[error("TP {tp} × PP {pp} × DP {dp} = {gpus} GPUs, but the fabric has {hosts} hosts")]
    Gpus {
        /// TP.
        tp: u32,
        /// PP.
        pp: u32,
        /// DP.
        dp: u32,
        /// Their product.
        gpus: u64,
        /// Hosts of the fabric.
        hosts: usize,
    },
    /// The global batch is not a whole number of micro-batches per replica.
    #[error("global batch {batch} is not a multiple of DP {dp} × micro-batch {micro}")]
    Batch {
        /// Global batch.
        batch: u32,
        /// DP.
        dp: u32,
        /// Micro-batch.
        micro: u32,
    },
}

impl JobSpec {
    /// GPT-3 175B (96 layers, hidden 12288, 2048 tokens) on 128 GPUs: TP 8
    /// (one leaf), DP 4 (the leaves of a pod), PP 4 (one stage per pod);
    /// 48 micro-batches of one sequence per replica (global batch 192, the
    /// per-replica batch of the paper's Table 33 setting); 125 TFLOP/s per
    /// GPU sustained (Table 33's GPU rate); bf16 activations, fp32
    /// gradients (Megatron-LM's default for bf16). [SIM-015]
    pub fn gpt3_175b() -> JobSpec {
        JobSpec {
            model: "GPT-3-175B".into(),
            layers: 96,
            hidden: 12288,
            seq_len: 2048,
            params: 175e9,
            global_batch: 192,
            micro_batch: 1,
            tp: 8,
            pp: 4,
            dp: 4,
            gpu_flops: 125e12,
            act_bytes: 2,
            grad_bytes: 4,
            scaleup_gbps: None,
        }
    }

    /// Micro-batches each pipeline runs per iteration.
    pub fn micro_batches(&self) -> u32 {
        let per = u64::from(self.dp) * u64::from(self.micro_batch);
        u32::try_from(u64::from(self.global_batch) / per.max(1)).unwrap_or(0)
    }

    /// Seconds one stage computes the forward and backward pass of one
    /// micro-batch: 6 FLOPs per parameter per token (2 forward, 4
    /// backward), the stage's share of the parameters split over TP.
    pub fn slot_compute_s(&self) -> f64 {
        let tokens = f64::from(self.micro_batch) * self.seq_len as f64;
        6.0 * self.params * tokens / (f64::from(self.tp) * f64::from(self.pp)) / self.gpu_flops
    }

    /// Bytes each TP rank AllReduces per micro-batch on one stage: four
    /// AllReduces of b·s·h activations per layer (two forward, after
    /// attention and after the MLP, two backward).
    pub fn tp_bytes_per_slot(&self) -> f64 {
        let layers = f64::from(self.layers / self.pp.max(1));
        4.0 * layers * self.activation_bytes()
    }

    /// Bytes of one micro-batch's activations at a stage boundary (and of
    /// the gradient sent back): b·s·h elements.
    pub fn activation_bytes(&self) -> f64 {
        f64::from(self.micro_batch)
            * self.seq_len as f64
            * self.hidden as f64
            * f64::from(self.act_bytes)
    }

    /// Bytes each DP rank AllReduces per iteration: the gradients of its
    /// shard of the parameters.
    pub fn dp_bytes(&self) -> f64 {
        self.params / (f64::from(self.tp) * f64::from(self.pp)) * f64::from(self.grad_bytes)
    }

    fn validate(&self, hosts: usize) -> Result<(), JobError> {
        for (v, what) in [
            (self.tp, "TP"),
            (self.pp, "PP"),
            (self.dp, "DP"),
            (self.micro_batch, "the micro-batch"),
            (self.layers, "the layer count"),
        ] {
            if v == 0 {
                return Err(JobError::Zero(what));
            }
        }
        if self.gpu_flops <= 0.0 || self.params <= 0.0 {
            return Err(JobError::Zero("the GPU rate and parameter count"));
        }
        if self.scaleup_gbps.is_some_and(|g| g <= 0.0) {
            return Err(JobError::Zero("the scale-up bandwidth"));
        }
        let gpus = u64::from(self.tp) * u64::from(self.pp) * u64::from(self.dp);
        if gpus != hosts as u64 {
            return Err(JobError::Gpus {
                tp: self.tp,
                pp: self.pp,
                dp: self.dp,
                gpus,
                hosts,
            });
        }
        let per = u64::from(self.dp) * u64::from(self.micro_batch);
        if self.micro_batches() == 0 || !u64::from(self.global_batch).is_multiple_of(per) {
            return Err(JobError::Batch {
                batch: self.global_batch,
                dp: self.dp,
                micro: self.micro_batch,
            });
        }
        Ok(())
    }
}

/// A job laid out on a fabric of `hosts` hosts: its groups and the phases
/// of one iteration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    /// What it is.
    pub spec: JobSpec,
    /// TP groups (by stage, then DP rank), then DP groups (by stage, then
    /// tensor rank): the order in which an iteration first uses them.
    pub groups: Vec<CommGroup>,
    /// One iteration.
    pub phases: Vec<Phase>,
}

impl Job {
    /// Lays `spec` out on hosts `0..hosts`. [SIM-015]
    pub fn new(spec: JobSpec, hosts: usize) -> Result<Job, JobError> {
        spec.validate(hosts)?;
        let (tp, pp, dp) = (spec.tp, spec.pp, spec.dp);
        let host = |t: u32, d: u32, s: u32| HostId(t + tp * (d + dp * s));
        let mut groups = Vec::new();
        for s in 0..pp {
            for d in 0..dp {
                groups.push(CommGroup {
                    name: format!("tp-s{s}-d{d}"),
                    kind: GroupKind::Tp,
                    hosts: (0..tp).map(|t| host(t, d, s)).collect(),
                    scaleup: spec.scaleup_gbps.is_some(),
                });
            }
        }
        for s in 0..pp {
            for t in 0..tp {
                groups.push(CommGroup {
                    name: format!("dp-s{s}-t{t}"),
                    kind: GroupKind::Dp,
                    hosts: (0..dp).map(|d| host(t, d, s)).collect(),
                    scaleup: false,
                });
            }
        }
        let tp_group = |s: u32, d: u32| (s * dp + d) as usize;
        let dp_group = |s: u32, t: u32| (pp * dp + s * tp + t) as usize;
        let m = spec.micro_batches();
        let busy = |k: u32| -> Vec<u32> { (0..pp).filter(|&s| s <= k && k < s + m).collect() };
        // Runs of slots with the same busy stages.
        let mut runs: Vec<(Vec<u32>, u32)> = Vec::new();
        for k in 0..m.saturating_add(pp - 1) {
            let b = busy(k);
            match runs.last_mut() {
                Some((last, n)) if *last == b => *n += 1,
                _ => runs.push((b, 1)),
            }
        }
        let mut phases = Vec::new();
        let act = spec.activation_bytes();
        for (stages, n) in runs {
            let n_f = f64::from(n);
            let mut transfers = Vec::new();
            if tp > 1 {
                for &s in &stages {
                    for d in 0..dp {
                        transfers.push(Transfer::AllReduce {
                            group: tp_group(s, d),
                            bytes: n_f * spec.tp_bytes_per_slot(),
                        });
                    }
                }
            }
            for &s in &stages {
                if !stages.contains(&(s + 1)) {
                    continue;
                }
                for d in 0..dp {
                    for t in 0..tp {
                        let (a, b) = (host(t, d, s), host(t, d, s + 1));
                        let bytes = n_f * act;
                        transfers.push(Transfer::Send {
                            from: a,
                            to: b,
                            bytes,
                        });
                        transfers.push(Transfer::Send {
                            from: b,
                            to: a,
                            bytes,
                        });
                    }
                }
            }
            phases.push(Phase {
                slots: n,
                compute_s: n_f * spec.slot_compute_s(),
                transfers,
            });
        }
        if dp > 1 {
            phases.push(Phase {
                slots: 0,
                compute_s: 0.0,
                transfers: (0..pp)
                    .flat_map(|s| (0..tp).map(move |t| (s, t)))
                    .map(|(s, t)| Transfer::AllReduce {
                        group: dp_group(s, t),
                        bytes: spec.dp_bytes(),
                    })
                    .collect(),
            });
        }
        Ok(Job {
            spec,
            groups,
            phases,
        })
    }
}
