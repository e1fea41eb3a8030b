//! A second tenant of a shared block (temporal multiplexing, paper §6.2),
//! for tests and labs: a group of two ranks that only ever takes the
//! block and gives it back. Its ranks are RC QPs of their own; a switch
//! driver hands their lock Barriers' control messages to the engine as if
//! they had come from the ranks' hosts. [TMX-010] [TMX-013]

use epic_proto::engine::{
    ContextConfig, IncEngine, InstallError, Mode, Peer, Placement, PsnAlignment,
};
use epic_proto::roce::{ApiError, ConfigError, PathConfig, QpConfig, RcQp, SendOp, WrId};
use epic_proto::wire::{
    Collective, DataType, EmitError, EpicFlags, EpicHeaderRepr, GroupId, Qpn, ReduceOp,
    ValueTooBig, EPIC_HEADER_LEN, EPIC_IMM_TAG,
};
use epic_proto::{Instant, Psn};

type TenantQp = RcQp<Vec<u8>, Vec<u8>>;

/// The second tenant of one switch's shared block.
#[derive(Debug)]
pub struct LockTenant {
    group: GroupId,
    /// Each rank's switch port and QP.
    qps: Vec<(u16, TenantQp)>,
    /// The next invocation: each rank sends one control per invocation,
    /// so it is also the control's PSN.
    seq: u32,
    holding: bool,
}

/// Why a tenant cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TenantError {
    /// The context beside which it was to sit has fewer than two edges.
    #[error("the context has fewer than two edges")]
    TooFewEdges,
    /// The engine holds no context of the tenant's group.
    #[error("no context of group {0} on the switch")]
    NotInstalled(GroupId),
    /// A tenant QP number does not fit 24 bits.
    #[error("tenant QP: {0}")]
    Qpn(#[source] ValueTooBig),
    /// A rank's QP refused its configuration.
    #[error("tenant QP: {0}")]
    Qp(#[source] ConfigError),
    /// A control message's EPIC header could not be written.
    #[error("tenant QP: {0}")]
    Header(#[source] EmitError),
    /// A rank's QP refused to post or to transmit its control message.
    #[error("tenant QP: {0}")]
    Send(#[source] ApiError),
    /// A rank's QP had nothing to send after the control was posted.
    #[error("tenant QP: nothing to send")]
    NothingToSend,
    /// The engine refused a context or its block.
    #[error("install: {0}")]
    Install(#[source] InstallError),
}

impl LockTenant {
    /// The tenant's context beside `ctx`: a Mode II group of two ranks on
    /// its first two edges, with QP numbers of its own (0x3000 + r on the
    /// switch, 0x900 + r on the ranks).
    pub fn context(group: GroupId, ctx: &ContextConfig) -> Result<ContextConfig, TenantError> {
        let mut endpoints: Vec<_> = ctx.endpoints.iter().take(2).copied().collect();
        if endpoints.len() < 2 {
            return Err(TenantError::TooFewEdges);
        }
        for (i, e) in (0u32..).zip(endpoints.iter_mut()) {
            e.local_qpn = Qpn::try_new(0x3000 + i).map_err(TenantError::Qpn)?;
            e.remote_qpn = Qpn::try_new(0x900 + i).map_err(TenantError::Qpn)?;
            e.peer = Peer::Rank(u16::try_from(i).unwrap_or(0));
        }
        Ok(ContextConfig {
            group,
            mode: Mode::Translated,
            ranks: 2,
            endpoints,
            parent: None,
            route: vec![0, 1],
            slots: 8,
            message_packets: 1,
            max_payload: 256,
            reproducible: false,
            alignment: PsnAlignment::Resync,
        })
    }

    /// The tenant `group`'s context beside `ctx`, and the placement of
    /// tenant `t` in the one shared block both live in: offset 0, long
    /// enough for either (rounded up to 64 bytes). [TMX-001]
    pub fn shared_block(
        ctx: &ContextConfig,
        group: GroupId,
    ) -> Result<(ContextConfig, impl Fn(GroupId) -> Placement), TenantError> {
        let other = LockTenant::context(group, ctx)?;
        let mut len = 0u64;
        for c in [ctx, &other] {
            let fp = IncEngine::footprint_of(c).map_err(TenantError::Install)?;
            len = len.max(fp.total() as u64);
        }
        let at = move |tenant| Placement {
            offset: 0,
            len: len.div_ceil(64) * 64,
            tenant,
            shared: true,
        };
        Ok((other, at))
    }

    /// Installs `ctx` (tenant `owner`) and the tenant `group`'s context
    /// beside it in one shared block at offset 0, long enough for either
    /// ([`LockTenant::shared_block`]). [TMX-001] [TMX-002]
    pub fn install_beside(
        eng: &mut IncEngine,
        ctx: ContextConfig,
        owner: GroupId,
        group: GroupId,
    ) -> Result<(), TenantError> {
        let (other, at) = LockTenant::shared_block(&ctx, group)?;
        eng.install_at(ctx, at(owner))
            .map_err(TenantError::Install)?;
        eng.install_at(other, at(group))
            .map_err(TenantError::Install)?;
        Ok(())
    }

    /// The tenant of `group`, whose context `eng` holds.
    pub fn new(group: GroupId, eng: &IncEngine) -> Result<LockTenant, TenantError> {
        let cfg = eng
            .context(group)
            .ok_or(TenantError::NotInstalled(group))?
            .config();
        let sw = eng.config();
        let qps = cfg
            .endpoints
            .iter()
            .map(|e| {
                let path = PathConfig::new(e.remote_mac, sw.mac, e.remote_ip, sw.ip);
                RcQp::new(QpConfig::new(e.remote_qpn, e.local_qpn, path))
                    .map(|q| (e.port, q))
                    .map_err(TenantError::Qp)
            })
            .collect::<Result<_, _>>()?;
        Ok(LockTenant {
            group,
            qps,
            seq: 0,
            holding: false,
        })
    }

    /// Whether the tenant holds (or tried to take) the block.
    pub fn holding(&self) -> bool {
        self.holding
    }

    /// Takes the block (rank 0's acquire control alone: the Barrier stays
    /// open, so the block stays taken) or gives it back (rank 1's acquire
    /// control, then both ranks' release controls), as `hold` says.
    pub fn follow(
        &mut self,
        eng: &mut IncEngine,
        now: Instant,
        hold: bool,
    ) -> Result<(), TenantError> {
        for (port, f) in self.frames(hold)? {
            eng.handle_frame(now, port, &f);
        }
        Ok(())
    }

    /// The control messages [`follow`](LockTenant::follow) hands the
    /// engine, each with the switch port it arrives on, for a switch the
    /// caller reaches only through its ports (a device under test): none
    /// when the tenant already does what `hold` says. [TMX-010] [TMX-013]
    pub fn frames(&mut self, hold: bool) -> Result<Vec<(u16, Vec<u8>)>, TenantError> {
        if hold == self.holding {
            return Ok(Vec::new());
        }
        let seq = self.seq;
        let steps: &[(usize, u32, bool)] = if hold {
            &[(0, 0, true)]
        } else {
            &[(1, 0, true), (0, 1, false), (1, 1, false)]
        };
        let mut out = Vec::with_capacity(steps.len());
        for &(r, k, acquire) in steps {
            out.push(self.control(r, seq + k, acquire)?);
        }
        if !hold {
            self.seq += 2;
        }
        self.holding = hold;
        Ok(out)
    }

    /// Rank `r`'s control message of lock Barrier `seq`, and the switch
    /// port it arrives on.
    fn control(
        &mut self,
        r: usize,
        seq: u32,
        acquire: bool,
    ) -> Result<(u16, Vec<u8>), TenantError> {
        let c = Psn::from_truncated(seq);
        let h = EpicHeaderRepr {
            group_id: self.group,
            invocation: seq,
            collective: Collective::Barrier,
            reduce_op: ReduceOp::None,
            data_type: DataType::None,
            flags: EpicFlags {
                acquire,
                release: !acquire,
                ..EpicFlags::default()
            },
            root_rank: 0,
            first_psn: c.next(),
            packet_count: 0,
            element_count: 0,
            payload_bytes_per_packet: 0,
        };
        let mut hdr = vec![0u8; EPIC_HEADER_LEN];
        h.emit(&mut hdr).map_err(TenantError::Header)?;
        let (port, qp) = self.qps.get_mut(r).ok_or(TenantError::TooFewEdges)?;
        qp.post_send(
            WrId(u64::from(seq)),
            SendOp::SendWithImm { imm: EPIC_IMM_TAG },
            hdr,
        )
        .map_err(|e| TenantError::Send(e.error))?;
        let mut buf = vec![0u8; qp.max_frame_len()];
        let n = qp
            .poll_transmit(Instant::ZERO, &mut buf)
            .map_err(TenantError::Send)?
            .ok_or(TenantError::NothingToSend)?;
        buf.truncate(n);
        Ok((*port, buf))
    }
}
