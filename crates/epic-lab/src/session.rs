//! A cluster kept running between calls, for benchmarks: build it once,
//! then time batches of calls of one (collective, size), every output
//! checked.

use std::time::Duration;

use epic_proto::wire::Collective;

use crate::cluster::LabCluster;
use crate::config::{LabConfig, LabMode};
use crate::run::iteration;
use crate::{BuildError, CallError, LabError};
use epic_proto::host::reference::Case;

/// A running in-process cluster in one mode, with its own runtime.
#[derive(Debug)]
pub struct Session {
    rt: tokio::runtime::Runtime,
    cluster: Option<LabCluster>,
    cfg: LabConfig,
}

impl Session {
    /// Builds the cluster of `cfg` in `mode` and starts it.
    pub fn start(cfg: &LabConfig, mode: LabMode) -> Result<Session, LabError> {
        cfg.validate()?;
        // One runtime serves every size: `threads: 0` means one thread.
        let cfg = cfg.resolved(cfg.threads.max(1));
        let rt = crate::run::runtime(&cfg)?;
        let cluster = rt.block_on(LabCluster::start(&cfg, mode, None))?;
        Ok(Session {
            rt,
            cluster: Some(cluster),
            cfg,
        })
    }

    /// Runs `calls` calls of `collective` over vectors of `bytes` bytes
    /// (see [`Row::bytes`](crate::Row::bytes)) one after the other and
    /// returns their summed latency (start to the last rank's completion).
    /// A wrong output or a failed call is an error.
    pub fn time(
        &mut self,
        collective: Collective,
        bytes: u64,
        calls: u64,
    ) -> Result<Duration, LabError> {
        let ranks = self.cfg.ranks();
        let elements = usize::try_from(bytes / self.cfg.elem_bytes()).unwrap_or(usize::MAX);
        let k = usize::from(ranks).max(1);
        let elements = match collective {
            Collective::Barrier => 0,
            Collective::ReduceScatter | Collective::AllGather => (elements / k).max(1) * k,
            _ => elements.max(1),
        };
        let case = Case::new(
            collective,
            self.cfg.dtype,
            self.cfg.op,
            self.cfg.root,
            k,
            elements,
        );
        let cluster = self.cluster.as_mut().ok_or(BuildError::Stopped)?;
        let cfg = &self.cfg;
        self.rt.block_on(async {
            let mut total = Duration::ZERO;
            for _ in 0..calls {
                let (elapsed, outputs) = iteration(cfg, cluster, &case)
                    .await
                    .map_err(LabError::Call)?;
                case.verify(&outputs).map_err(|m| CallError::Wrong {
                    rank: m.rank,
                    detail: m.detail,
                })?;
                total += elapsed;
            }
            Ok(total)
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(c) = self.cluster.take() {
            self.rt.block_on(c.shutdown());
        }
    }
}
