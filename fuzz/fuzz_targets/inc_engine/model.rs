//! The harness's model of invocations: beginning one (a header the ranks
//! will announce), the routing patterns of [ENG-012], the payloads every
//! peer sends and the results the switch must produce from them.

use epic_proto::engine::aggregate::{ElemType, Op, Reduction};
use epic_proto::engine::PatternBinding;
use epic_proto::wire::{Collective, DataType, EpicFlags, ReduceOp};

use super::*;

/// How one PSN's packets move through the switch (engine `Pattern`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pat {
    AllReduce,
    /// Reduce toward the rank behind this endpoint.
    To(usize),
    /// Broadcast from the rank behind this endpoint.
    From(usize),
}

/// What an emitted data packet must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expected {
    Bytes(Vec<u8>),
    /// A float sum: order-dependent, not checked.
    Unchecked,
    /// The pattern sends this PSN's data nowhere near that endpoint.
    Never,
}

impl Ctx {
    /// The pattern of `psn` in `inv` (controls travel like an AllReduce).
    pub(crate) fn pattern(&self, inv: &ModelInv, psn: Psn) -> Pat {
        if psn == inv.c {
            return Pat::AllReduce;
        }
        let root = || usize::from(self.cfg.route[usize::from(inv.h.root_rank)]);
        match inv.h.collective {
            Collective::Reduce => Pat::To(root()),
            Collective::Broadcast => Pat::From(root()),
            _ => Pat::AllReduce,
        }
    }

    /// Whether the peer behind `ep` sends packets of `pat` to the switch.
    pub(crate) fn sends(&self, pat: Pat, ep: usize) -> bool {
        match pat {
            Pat::AllReduce => true,
            Pat::To(t) => ep != t,
            Pat::From(s) => ep == s,
        }
    }

    /// The senders the "every sender" operations use: for an AllReduce
    /// the children (the parent's part is the echo, see `pump`).
    pub(crate) fn senders(&self, pat: Pat) -> Vec<usize> {
        (0..self.eps())
            .filter(|e| {
                self.sends(pat, *e) && !(pat == Pat::AllReduce && Some(*e) == self.parent())
            })
            .collect()
    }

    /// The inputs of the Up (aggregation) pipe.
    fn up_inputs(&self, pat: Pat) -> Vec<usize> {
        (0..self.eps())
            .filter(|e| match pat {
                Pat::AllReduce => Some(*e) != self.parent(),
                Pat::To(t) => *e != t,
                Pat::From(_) => false,
            })
            .collect()
    }

    /// The payload the peer behind `ep` sends for `block` of `inv`.
    pub(crate) fn payload(&self, inv: &ModelInv, ep: usize, block: u32, len: usize) -> Vec<u8> {
        let seed = u64::from(inv.h.invocation)
            .wrapping_mul(0x9e37_79b9)
            .wrapping_add(u64::from(self.cfg.group.0) << 20)
            .wrapping_add((ep as u64) << 12)
            .wrapping_add(u64::from(block).wrapping_mul(0x51));
        (0..len as u64)
            .map(|i| (i.wrapping_mul(0x2545_f491).wrapping_add(seed) >> 5) as u8)
            .collect()
    }

    /// What the switch must send toward `out` for `block` of `inv`.
    pub(crate) fn expected(&self, inv: &ModelInv, block: u32, out: usize) -> Expected {
        let Some(len) = inv.h.block_payload_len(block) else {
            return Expected::Never;
        };
        let pat = self.pattern(inv, inv.data_psn(block));
        self.expected_of(inv, pat, block, len, out, false)
    }

    /// Mode I: what message `k` of `inv` toward `out` must carry; float
    /// sums too, since Mode I reduces in endpoint order. [M1-031]
    /// [M1-032] [M1-033]
    pub(crate) fn expected1(&self, inv: &ModelInv, k: u32, out: usize) -> Expected {
        if k >= self.msgs(inv) {
            return Expected::Never;
        }
        let pat = self.pattern(inv, inv.data_psn(0));
        self.expected_of(inv, pat, k, self.msg_len(inv, k), out, true)
    }

    /// Mode I: the messages of `inv`. [M1-010]
    pub(crate) fn msgs(&self, inv: &ModelInv) -> u32 {
        let msg = self.msg_bytes(inv);
        let bytes = inv_bytes(inv);
        if bytes == 0 || msg == 0 {
            0
        } else {
            u32::try_from(bytes.div_ceil(msg)).unwrap_or(u32::MAX)
        }
    }

    /// Mode I: the length of message `k` of `inv`.
    pub(crate) fn msg_len(&self, inv: &ModelInv, k: u32) -> usize {
        let at = k as usize * self.msg_bytes(inv);
        inv_bytes(inv).saturating_sub(at).min(self.msg_bytes(inv))
    }

    fn msg_bytes(&self, inv: &ModelInv) -> usize {
        usize::from(inv.h.payload_bytes_per_packet) * self.cfg.message_packets.max(1) as usize
    }

    fn expected_of(
        &self,
        inv: &ModelInv,
        pat: Pat,
        block: u32,
        len: usize,
        out: usize,
        exact: bool,
    ) -> Expected {
        let reduce = |eps: Vec<usize>| self.reduce(inv, block, len, &eps, exact);
        match pat {
            Pat::AllReduce => match self.parent() {
                Some(p) if out != p => Expected::Bytes(self.payload(inv, p, block, len)),
                _ => reduce(self.up_inputs(pat)),
            },
            Pat::To(t) if out == t => reduce(self.up_inputs(pat)),
            Pat::From(s) if out != s => Expected::Bytes(self.payload(inv, s, block, len)),
            _ => Expected::Never,
        }
    }

    /// The reduction of the payloads of `eps`; `exact`: float sums in
    /// endpoint order too.
    fn reduce(
        &self,
        inv: &ModelInv,
        block: u32,
        len: usize,
        eps: &[usize],
        exact: bool,
    ) -> Expected {
        let inputs: Vec<Vec<u8>> = eps
            .iter()
            .map(|e| self.payload(inv, *e, block, len))
            .collect();
        let Some(r) = Reduction::from_wire(inv.h.data_type, inv.h.reduce_op) else {
            return Expected::Never;
        };
        if r.elem == ElemType::Int32 {
            // Computed here, independently of the engine's kernels.
            let words = |b: &Vec<u8>| -> Vec<i32> {
                b.chunks_exact(4)
                    .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
                    .collect()
            };
            let mut acc = match inputs.first() {
                Some(b) => words(b),
                None => return Expected::Never,
            };
            for b in inputs.iter().skip(1) {
                for (a, x) in acc.iter_mut().zip(words(b)) {
                    *a = match r.op {
                        Op::Sum => a.wrapping_add(x),
                        Op::Min => (*a).min(x),
                        Op::Max => (*a).max(x),
                    };
                }
            }
            return Expected::Bytes(acc.iter().flat_map(|v| v.to_be_bytes()).collect());
        }
        if r.op == Op::Sum && !exact {
            return Expected::Unchecked;
        }
        // Float Min/Max are exact and order-independent [ENG-032]: the
        // engine's kernels in any order give the switch's bits. Mode I
        // sums in endpoint order [M1-032], as `eps` lists them.
        let mut acc = vec![0u8; r.elem.acc_len(len)];
        let mut out = vec![0u8; len];
        let ok = inputs.split_first().is_some_and(|(first, rest)| {
            r.load(&mut acc, first).is_ok()
                && rest.iter().all(|b| r.accumulate(&mut acc, b).is_ok())
                && r.store(&acc, &mut out).is_ok()
        });
        if ok {
            Expected::Bytes(out)
        } else {
            Expected::Never
        }
    }
}

/// The payload bytes of `inv`.
fn inv_bytes(inv: &ModelInv) -> usize {
    let size = u64::from(inv.h.data_type.size_bytes().unwrap_or(0));
    usize::try_from(inv.h.element_count.saturating_mul(size)).unwrap_or(usize::MAX)
}

impl Harness {
    /// Context 0, or with `bit` the second one when there is one.
    pub(crate) fn ctx_index(&self, bit: bool) -> usize {
        if bit && self.ctxs.len() > 1 {
            1
        } else {
            0
        }
    }

    /// BEGIN: the ranks of a context start a new invocation (no frame).
    ///
    /// | byte | meaning |
    /// |------|---------|
    /// | 0    | bits 0..1: AllReduce, Reduce, Broadcast, Barrier (a per-pattern context: its pattern's collective unless 3 or byte 4 bit 6); bits 2..3: Sum, Min, Max, Sum; bits 4..5: INT32, FP32, FP16, BF16; bit 6: reproducible; bit 7: second context |
    /// | 1    | packets: 1 + `% 64`; 254: 2^23 − 1 (the most a header may announce: only its control and a few blocks fit an input, but group and wire PSNs of per-pattern contexts drift apart by half the circle); 255: none |
    /// | 2    | payload bytes per packet: bits 0..2 select (0..2: the most U allows; 3: one element; 4: half; 5: one element more than U allows; 6, 7: 1 + bits 3..7 elements) |
    /// | 3    | elements in the last packet: 1 + `% per packet` |
    /// | 4    | root rank (`% K`); a per-pattern context: its pattern's root, or with bit 6 bits 0..5 `% K` and byte 0's collective |
    /// | 5    | control PSN: 0..=239 right after the previous invocation, 240..=254 that many − 239 later, 255 a few PSNs earlier (overlapping); Mode I: ignored |
    ///
    /// An invocation the engine must refuse (a collective the binding does
    /// not carry [CTL-050], more payload per packet than U [CTL-013]) takes
    /// no PSNs and no sequence number.
    pub(crate) fn begin(&mut self, cur: &mut Cursor<'_>) {
        let sel = cur.u8();
        let count = cur.u8();
        let size_sel = cur.u8();
        let last = cur.u8();
        let root = cur.u8();
        let jump = cur.u8();
        let ci = self.ctx_index(sel & 0x80 != 0);
        let binding = self.ctxs[ci].binding();
        // A per-pattern context runs its own pattern unless byte 4 bit 6
        // asks for the table's collective. [CTL-050]
        let own = binding.filter(|_| root & 0x40 == 0 && sel & 3 != 3);
        let collective = match (own, sel & 3) {
            (Some(PatternBinding::AllReduce), _) | (None, 0) => Collective::AllReduce,
            (Some(PatternBinding::Reduce { .. }), _) | (None, 1) => Collective::Reduce,
            (Some(PatternBinding::Broadcast { .. }), _) | (None, 2) => Collective::Broadcast,
            (None, _) => Collective::Barrier,
        };
        let barrier = collective == Collective::Barrier;
        let dtype = [
            DataType::Int32,
            DataType::Fp32,
            DataType::Fp16,
            DataType::Bf16,
        ][usize::from((sel >> 4) & 3)];
        let op = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max, ReduceOp::Sum]
            [usize::from((sel >> 2) & 3)];
        let ctx = &self.ctxs[ci];
        let size = dtype.size_bytes().unwrap_or(4);
        let u = ctx.cfg.max_payload.min(MAX_PAYLOAD_BYTES);
        let max_ppb = (u / size) * size;
        let ppb = match size_sel & 7 {
            0..=2 => max_ppb,
            3 => size,
            4 => (max_ppb / 2 / size).max(1) * size,
            5 if max_ppb + size <= MAX_PAYLOAD_BYTES => max_ppb + size,
            5 => max_ppb,
            _ => (size * (1 + u16::from(size_sel >> 3))).min(max_ppb),
        };
        let packets = match (barrier, count) {
            (true, _) | (false, 255) => 0,
            (false, 254) => Psn::HALF - 1,
            (false, n) => 1 + u32::from(n % 64),
        };
        let per = u64::from(ppb / size);
        let elements = match packets {
            0 => 0,
            p => u64::from(p - 1) * per + 1 + u64::from(last) % per,
        };
        let rooted = matches!(collective, Collective::Reduce | Collective::Broadcast);
        let root_rank = match own.and_then(PatternBinding::root) {
            _ if !rooted => 0,
            Some(r) => r,
            None if binding.is_some() => u16::from(root & 0x3f) % ctx.cfg.ranks,
            None => u16::from(root) % ctx.cfg.ranks,
        };
        let admitted = ctx.admits(collective, root_rank) && (barrier || ppb <= u);
        let c = match jump {
            _ if !admitted || ctx.mode1() => ctx.next_c,
            0..=239 => ctx.next_c,
            240..=254 => {
                // Gapless invocations on per-pattern contexts. [CTL-051]
                self.clean &= binding.is_none();
                self.ctxs[ci].tangled |= binding.is_some();
                self.ctxs[ci].next_c.add(u32::from(jump - 239))
            }
            255 => {
                self.clean = false;
                self.ctxs[ci].tangled |= binding.is_some();
                self.ctxs[ci].next_c.sub(1 + u32::from(last & 7))
            }
        };
        let ctx = &self.ctxs[ci];
        let reduces = matches!(collective, Collective::AllReduce | Collective::Reduce);
        let h = EpicHeaderRepr {
            group_id: ctx.cfg.group,
            invocation: ctx.next_seq,
            collective,
            reduce_op: if reduces { op } else { ReduceOp::None },
            data_type: if barrier { DataType::None } else { dtype },
            flags: EpicFlags {
                reproducible: sel & 0x40 != 0,
                // A Barrier's op bits ask for a shared block's lock.
                // [TMX-010] [TMX-013]
                acquire: barrier && sel & 0x04 != 0,
                release: barrier && sel & 0x08 != 0,
                ..EpicFlags::default()
            },
            root_rank,
            first_psn: c.next(),
            packet_count: packets,
            element_count: elements,
            payload_bytes_per_packet: if barrier { 0 } else { ppb },
        };
        if let Err(v) = h.validate().and_then(|()| h.check_control_psn(c)) {
            panic!("the harness built an invalid header: {v:?} ({h:?})");
        }
        let ctx = &mut self.ctxs[ci];
        let inv = ModelInv {
            h,
            c,
            r: ctx.next_r,
            admitted,
            installed: false,
        };
        // Invocations the engine may still hold that, with this one, span
        // half the 2^24 circle or more: no RC sender has that many PSNs
        // outstanding (fewer than 2^23), and serial comparisons, which
        // both the engine and this model use to place a PSN in a range,
        // are then ambiguous (a range coming round onto an older one is
        // the extreme case).
        let len = |i: &ModelInv| u64::from(1 + i.h.packet_count);
        let wraps = ctx
            .invs
            .iter()
            .rev()
            .take(epic_proto::engine::INVOCATION_SLOTS)
            .any(|o| {
                let overlap = u64::from(c.distance_from(o.c)) < len(o)
                    || u64::from(o.c.distance_from(c)) < len(&inv);
                let span = u64::from(c.distance_from(o.c)) + len(&inv);
                o.admitted && (overlap || span >= 1 << 23)
            });
        let bound = binding.is_some();
        let ctx = &mut self.ctxs[ci];
        if admitted && wraps {
            self.clean = false;
            // Nor do wire and group PSNs map one to one any more.
            ctx.tangled |= bound;
        }
        if admitted {
            ctx.next_c = inv.end();
            ctx.next_seq = ctx.next_seq.wrapping_add(1);
            ctx.next_r = ctx.next_r.next();
        }
        if ctx.invs.len() >= MODEL_INVS {
            ctx.invs.pop_front();
            self.forgot = true;
        }
        ctx.invs.push_back(inv);
        if tracing() {
            eprintln!(
                "  ctx {ci}: begin {c} (wire {}, admitted {admitted}) {h:?}",
                inv.r
            );
        }
    }
}
