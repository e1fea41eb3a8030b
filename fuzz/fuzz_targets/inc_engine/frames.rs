//! The Harness: frames from the switch's peers, valid and otherwise.

use epic_proto::roce::rxe_udp_sport;
use epic_proto::testing::FrameBuilder;
use epic_proto::wire::{
    refresh_checksums, rewrite_headers, AethRepr, Collective, DataType, ExtHeaders, HeaderRewrite,
    ImmDtRepr, NakCode, Opcode, ReduceOp, RoceFrame, Syndrome, EPIC_HEADER_LEN, EPIC_IMM_TAG,
};

use super::model::Pat;
use super::*;

impl Harness {
    /// A frame from the peer of endpoint `ep` of context `ci` to the switch.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn frame(
        &self,
        ci: usize,
        ep: usize,
        opcode: Opcode,
        psn: Psn,
        ack_req: bool,
        ext: ExtHeaders,
        payload: &[u8],
    ) -> Vec<u8> {
        let e = self.ctxs[ci].ep(ep);
        let frame = FrameBuilder::new(opcode)
            .dst_mac(SWITCH_MAC)
            .src_mac(e.remote_mac)
            .src_ip(e.remote_ip)
            .dst_ip(SWITCH_IP)
            .ident(0)
            .src_port(rxe_udp_sport(e.remote_qpn, e.local_qpn))
            .dest_qp(e.local_qpn)
            .ack_req(ack_req)
            .psn(psn)
            .ext(ext)
            .payload(payload);
        match frame.try_build() {
            Ok(buf) => buf,
            Err(err) => panic!(
                "emit of a synthesized frame failed: {err:?} ({:?})",
                frame.repr()
            ),
        }
    }

    /// The endpoints an operation addresses: `sel % eps`, or for 15 every
    /// sender of `pat`.
    fn targets(&self, ci: usize, sel: u8, pat: Pat) -> Vec<usize> {
        let ctx = &self.ctxs[ci];
        if sel & 15 == 15 {
            ctx.senders(pat)
        } else {
            vec![usize::from(sel & 15) % ctx.eps()]
        }
    }

    /// CONTROL: control messages of the newest (or the previous) invocation.
    ///
    /// | byte | meaning |
    /// |------|---------|
    /// | 0    | bits 0..3: endpoint (`% eps`; 15: every child); bit 6: the previous invocation; bit 7: second context |
    /// | 1    | variant (`% 16`): 0..=7 the header as begun; 8 another group; 9 collective 5; 10 collective 6; 11 quantized; 12 a Reduce rooted outside the group; 13 a header failing validation; 14 no EPIC tag; 15 contradicting (byte 2 picks the field) |
    /// | 2    | argument of the variant |
    pub(crate) fn control(&mut self, cur: &mut Cursor<'_>) {
        let who = cur.u8();
        let variant = cur.u8() & 15;
        let arg = cur.u8();
        let ci = self.ctx_index(who & 0x80 != 0);
        let Some(inv) = self.ctxs[ci].inv(who & 0x40 != 0) else {
            return;
        };
        for ep in self.targets(ci, who, Pat::AllReduce) {
            if self.ctxs[ci].mode1() {
                self.post_control1(ci, ep, &inv, [variant, arg], true);
            } else {
                self.send_control(ci, ep, &inv, variant, arg);
            }
        }
    }

    pub(crate) fn send_control(
        &mut self,
        ci: usize,
        ep: usize,
        inv: &ModelInv,
        variant: u8,
        arg: u8,
    ) {
        let mut h = inv.h;
        let mut psn = inv.c;
        let mut tag = EPIC_IMM_TAG;
        let refused = Expect::Control { refused: true };
        // Not admitted: a collective the binding does not carry, or more
        // payload per packet than U. [CTL-013] [CTL-050]
        let expect = match variant {
            0..=7 if !inv.admitted => refused,
            0..=7 => Expect::Control { refused: false },
            8..=12 => {
                refuse(&mut h, variant, arg, self.ctxs[ci].cfg.ranks);
                refused
            }
            13 => {
                h.packet_count = h.packet_count.wrapping_add(1 + u32::from(arg % 4));
                Expect::BadControl
            }
            14 => {
                tag = EPIC_IMM_TAG ^ (1 + u32::from(arg));
                Expect::Unsupported
            }
            _ => {
                self.clean = false;
                match arg & 3 {
                    0 => h.invocation = h.invocation.wrapping_add(1),
                    1 => psn = psn.next(),
                    2 => h.flags.reproducible = !h.flags.reproducible,
                    _ => psn = psn.sub(1),
                }
                h.first_psn = psn.next();
                Expect::Control {
                    refused: !inv.admitted,
                }
            }
        };
        let valid = h.validate().and_then(|()| h.check_control_psn(psn));
        assert_eq!(
            valid.is_ok(),
            expect != Expect::BadControl,
            "harness: control variant {variant} validates as {valid:?} ({h:?})"
        );
        let mut hdr = [0u8; EPIC_HEADER_LEN];
        if let Err(e) = h.emit(&mut hdr) {
            panic!("emit of a header failed: {e:?}");
        }
        let ext = ExtHeaders {
            immdt: Some(ImmDtRepr(tag)),
            ..ExtHeaders::default()
        };
        // On a per-pattern direction that carries only controls, the wire
        // PSN is one per invocation. [CTL-051] The switch judges rule 10
        // on the group PSN it translates that to [CTL-054]: `psn`, unless
        // the engine numbers those wire PSNs otherwise than the hosts, or
        // the control was moved off its PSN (a wire PSN no host uses).
        let wire = self.ctxs[ci].request_psn(ep, psn);
        let expect = if self.ctxs[ci].control_only_in(ep)
            && (psn != inv.c || !self.ctxs[ci].translation_known(inv))
        {
            Expect::Any
        } else {
            expect
        };
        let bytes = self.frame(
            ci,
            ep,
            Opcode::RcSendOnlyWithImmediate,
            wire,
            true,
            ext,
            &hdr,
        );
        let port = self.ctxs[ci].ep(ep).port;
        self.hand(port, bytes, expect, true);
    }

    /// DATA: data packets of the newest (or the previous) invocation.
    ///
    /// | byte | meaning |
    /// |------|---------|
    /// | 0    | bits 0..3: endpoint (`% eps`; 15: every sender of the pattern); bit 4: every block (at most [`MAX_BLOCKS`]); bit 6: the previous invocation; bit 7: second context |
    /// | 1    | block (`% packets`) |
    /// | 2    | bits 0..1: opcode (0, 3: by position; 1: SEND ONLY; 2: byte 3 picks); bit 2: AckReq; bits 3..5: length (0..=4 right; 5: 1 + byte 3 % 4 elements more (byte 3 bit 2) or fewer; 6: empty; 7: U + 4); bit 6: 8 × byte 3 payload bytes from the input (forged); bit 7: PSN: the control's (byte 3 bit 7), or past the end (forged) |
    /// | 3    | argument |
    pub(crate) fn data(&mut self, cur: &mut Cursor<'_>) {
        let who = cur.u8();
        let block_sel = cur.u8();
        let variant = cur.u8();
        let arg = cur.u8();
        let ci = self.ctx_index(who & 0x80 != 0);
        let Some(inv) = self.ctxs[ci].inv(who & 0x40 != 0) else {
            return;
        };
        let forged = (variant & 0x40 != 0).then(|| cur.bytes(usize::from(arg) * 8).to_vec());
        if self.ctxs[ci].mode1() {
            self.data1(ci, &inv, [who, block_sel, variant, arg], forged.as_deref());
            return;
        }
        let p = inv.h.packet_count;
        let blocks = if who & 0x10 != 0 {
            0..p.min(MAX_BLOCKS)
        } else {
            let b = u32::from(block_sel) % p.max(1);
            b..b + 1
        };
        let pat = self.ctxs[ci].pattern(&inv, inv.data_psn(0));
        for ep in self.targets(ci, who, pat) {
            for b in blocks.clone() {
                self.send_data(ci, ep, &inv, b, [variant, arg], forged.as_deref());
            }
        }
    }

    pub(crate) fn send_data(
        &mut self,
        ci: usize,
        ep: usize,
        inv: &ModelInv,
        block: u32,
        [variant, arg]: [u8; 2],
        forged: Option<&[u8]>,
    ) {
        let right = inv.h.block_payload_len(block);
        let psn = match (variant & 0x80 != 0, arg & 0x80 != 0) {
            (false, _) => inv.data_psn(block),
            (true, true) => inv.c,
            (true, false) => {
                self.clean = false;
                inv.end().add(u32::from(arg & 0x3f))
            }
        };
        let ctx = &self.ctxs[ci];
        let size = usize::from(inv.h.data_type.size_bytes().unwrap_or(4));
        let len = match (variant >> 3) & 7 {
            0..=4 => right.unwrap_or(0),
            5 => {
                let r = right.unwrap_or(0);
                let d = size * (1 + usize::from(arg & 3));
                if arg & 4 != 0 {
                    r + d
                } else {
                    r.saturating_sub(d)
                }
            }
            6 => 0,
            _ => usize::from(ctx.cfg.max_payload) + 4,
        };
        let payload = match forged {
            Some(b) => {
                self.clean = false;
                b.to_vec()
            }
            None => ctx.payload(inv, ep, block, len),
        };
        if !inv.admitted {
            // Its PSNs are the next invocation's. [CTL-050]
            self.clean = false;
        }
        let off_pattern = ctx.control_only_in(ep);
        let inert = right != Some(payload.len()) || psn == inv.c;
        let p = inv.h.packet_count;
        let by_position = match block {
            _ if p <= 1 => Opcode::RcSendOnly,
            0 => Opcode::RcSendFirst,
            b if b + 1 == p => Opcode::RcSendLast,
            _ => Opcode::RcSendMiddle,
        };
        let opcode = match variant & 3 {
            1 => Opcode::RcSendOnly,
            2 => [
                Opcode::RcSendFirst,
                Opcode::RcSendMiddle,
                Opcode::RcSendLast,
                Opcode::RcSendOnly,
            ][usize::from(arg & 3)],
            _ => by_position,
        };
        let bytes = self.frame(
            ci,
            ep,
            opcode,
            psn,
            variant & 4 != 0,
            ExtHeaders::default(),
            &payload,
        );
        let port = ctx.ep(ep).port;
        self.hand(port, bytes, Expect::Data { inert, off_pattern }, true);
    }

    /// ACK: acknowledgements from the peers.
    ///
    /// | byte | meaning |
    /// |------|---------|
    /// | 0    | bits 0..3: endpoint (`% eps`; 15: every endpoint); bit 6: the previous invocation; bit 7: second context |
    /// | 1    | PSN (`% 8`): 0 the control's; 1 the last request the switch sent on the edge; 2 data PSN byte 3 `% (packets + 1)`; 3 the last data PSN; 4 the last sent + byte 3 as i8; 5 any (3 more bytes); 6 the control's − 1 − byte 3; 7 the next invocation's + byte 3 (group PSNs on the wire of a control-only direction; Mode I: see [`Harness::ack1`]) |
    /// | 2    | syndrome (`% 8`): 0..=3 ACK; 4 NAK sequence error; 5 RNR NAK, timer bits 3..7; 6 another NAK code; 7 byte 3 as the raw syndrome |
    /// | 3    | argument |
    pub(crate) fn ack(&mut self, cur: &mut Cursor<'_>) {
        let who = cur.u8();
        let psn_sel = cur.u8();
        let syn = cur.u8();
        let arg = cur.u8();
        let any = if psn_sel % 8 == 5 {
            Psn::from_truncated(cur.u24())
        } else {
            Psn::ZERO
        };
        let ci = self.ctx_index(who & 0x80 != 0);
        let ctx = &self.ctxs[ci];
        let inv = ctx.inv(who & 0x40 != 0);
        let c = inv.map_or(ctx.next_c.sub(1), |i| i.c);
        let p = inv.map_or(0, |i| i.h.packet_count);
        let eps: Vec<usize> = if who & 15 == 15 {
            (0..ctx.eps()).collect()
        } else {
            vec![usize::from(who & 15) % ctx.eps()]
        };
        let syndrome = match syn % 8 {
            0..=3 => Syndrome::ACK,
            4 => Syndrome::Nak(NakCode::PsnSequenceError),
            5 => Syndrome::RnrNak { timer: syn >> 3 },
            6 => Syndrome::Nak(NakCode::from(1 + (syn >> 3) % 3)),
            _ => Syndrome::from(arg),
        };
        if ctx.mode1() {
            for ep in eps {
                self.ack1(ci, ep, [psn_sel, arg], any, syndrome);
            }
            return;
        }
        for ep in eps {
            let last = self.last_out[ci][ep].unwrap_or(c);
            // Group PSNs, on the wire of a control-only direction. [CTL-052]
            let wire = |g: Psn| self.ctxs[ci].response_psn(ep, g);
            let psn = match psn_sel % 8 {
                0 => wire(c),
                1 => last,
                2 => wire(c.add(1 + u32::from(arg) % (p + 1))),
                3 => wire(c.add(p)),
                4 => {
                    let d = i32::from(arg as i8);
                    if d >= 0 {
                        last.add(d.unsigned_abs())
                    } else {
                        last.sub(d.unsigned_abs())
                    }
                }
                5 => any,
                6 => wire(c.sub(1 + u32::from(arg))),
                _ => wire(self.ctxs[ci].next_c.add(u32::from(arg))),
            };
            self.send_ack(ci, ep, psn, syndrome);
        }
    }

    pub(crate) fn send_ack(&mut self, ci: usize, ep: usize, psn: Psn, syndrome: Syndrome) {
        let ext = ExtHeaders {
            aeth: Some(AethRepr { syndrome, msn: 0 }),
            ..ExtHeaders::default()
        };
        let bytes = self.frame(ci, ep, Opcode::RcAcknowledge, psn, false, ext, &[]);
        let port = self.ctxs[ci].ep(ep).port;
        self.hand(port, bytes, Expect::Ack, true);
    }

    /// RAW: byte 0 the port, bytes 1..2 the length (`% 4200`), then the bytes.
    pub(crate) fn raw(&mut self, cur: &mut Cursor<'_>) {
        let port = PortNo::from(cur.u8() % 12);
        let len = usize::from(cur.u16() % 4200);
        let bytes = cur.bytes(len).to_vec();
        self.forge(port, bytes);
    }

    /// Hands in bytes that may be anything.
    fn forge(&mut self, port: PortNo, bytes: Vec<u8>) {
        if RoceFrame::parse_verified_transport(&bytes).is_ok() {
            self.clean = false;
        }
        self.hand(port, bytes, Expect::Any, false);
    }

    fn pick(&self, k: u8) -> Option<Sent> {
        let n = self.history.len();
        (n > 0).then(|| self.history[usize::from(k) % n].clone())
    }

    /// MUTATE: byte 0 picks a frame handed in earlier, byte 1 the mutation
    /// (bits 0..1: flip bytes, no fix-up; rewrite a byte, checksums fixed;
    /// truncate (bit 2: fixed); rewrite PSN/AckReq/QPN (checksums fixed)),
    /// then its arguments.
    pub(crate) fn mutate(&mut self, cur: &mut Cursor<'_>) {
        let k = cur.u8();
        let mode = cur.u8();
        let Some(sent) = self.pick(k) else {
            return;
        };
        let mut frame = sent.bytes.clone();
        let len = frame.len().max(1);
        match mode & 3 {
            0 => {
                for _ in 0..(mode >> 2 & 3) + 1 {
                    let at = usize::from(cur.u16()) % len;
                    if let Some(b) = frame.get_mut(at) {
                        *b ^= cur.u8() | 1;
                    }
                }
            }
            1 => {
                let at = usize::from(cur.u16()) % len;
                if let Some(b) = frame.get_mut(at) {
                    *b = cur.u8();
                }
                let _ = refresh_checksums(&mut frame);
            }
            2 => {
                frame.truncate(usize::from(cur.u16()) % (frame.len() + 1));
                if mode & 4 != 0 {
                    let _ = refresh_checksums(&mut frame);
                }
            }
            _ => {
                let mask = cur.u8();
                let delta = cur.u8();
                let psn = RoceFrame::parse(&frame).map(|f| f.bth.psn).ok();
                let rw = HeaderRewrite {
                    psn: (mask & 1 != 0)
                        .then(|| psn.map(|p| p.add(u32::from(delta)).sub(128)))
                        .flatten(),
                    ack_req: (mask & 2 != 0).then_some(mask & 4 != 0),
                    dest_qp: (mask & 8 != 0).then(|| qpn(0x1000 + u32::from(delta))),
                    ..HeaderRewrite::default()
                };
                let _ = rewrite_headers(&mut frame, &rw);
            }
        }
        if frame == sent.bytes {
            self.hand(sent.port, frame, Expect::Any, false);
        } else {
            self.forge(sent.port, frame);
        }
    }

    /// REPLAY: byte 0 picks a frame handed in earlier; it arrives again.
    pub(crate) fn replay(&mut self, cur: &mut Cursor<'_>) {
        if let Some(sent) = self.pick(cur.u8()) {
            self.hand(sent.port, sent.bytes, Expect::Any, false);
        }
    }

    /// MISDELIVER: byte 0 picks a frame handed in earlier; byte 1 (`% 3`)
    /// sends it on another port (byte 2 picks), to another IPv4 address, or
    /// to an unknown QPN.
    pub(crate) fn misdeliver(&mut self, cur: &mut Cursor<'_>) {
        let k = cur.u8();
        let how = cur.u8() % 3;
        let x = cur.u8();
        let Some(sent) = self.pick(k) else {
            return;
        };
        let mut frame = sent.bytes;
        let (port, expect) = match how {
            0 => (
                (sent.port + 1 + PortNo::from(x % 9)) % 10,
                Expect::WrongPort,
            ),
            1 => {
                let rw = HeaderRewrite {
                    dst_ip: Some(Ipv4Addr::new(10, 1, 0, 1 + x % 250)),
                    ..HeaderRewrite::default()
                };
                let _ = rewrite_headers(&mut frame, &rw);
                (sent.port, Expect::NotEpic)
            }
            _ => {
                let rw = HeaderRewrite {
                    dest_qp: Some(qpn(0x80_0000 | u32::from(x))),
                    ..HeaderRewrite::default()
                };
                let _ = rewrite_headers(&mut frame, &rw);
                (sent.port, Expect::UnknownQp)
            }
        };
        let expect = if sent.valid { expect } else { Expect::Any };
        self.hand(port, frame, expect, false);
    }
}

/// Control variants 8–12: a valid header every switch must refuse (another
/// group, ReduceScatter or AllGather as one invocation, a root outside the
/// `ranks`, the quantized flag). [CTL-013] [CTL-050]
pub(crate) fn refuse(h: &mut EpicHeaderRepr, variant: u8, arg: u8, ranks: u16) {
    match variant {
        8 => h.group_id = GroupId(h.group_id.0 ^ (1 + u32::from(arg))),
        11 => h.flags.quantized = true,
        _ => {
            h.collective = match variant {
                9 => Collective::ReduceScatter,
                10 => Collective::AllGather,
                _ => Collective::Reduce,
            };
            if h.data_type == DataType::None {
                h.data_type = DataType::Int32;
                h.payload_bytes_per_packet = 4;
            }
            h.reduce_op = match (variant, h.reduce_op) {
                (10, _) => ReduceOp::None,
                (_, ReduceOp::None) => ReduceOp::Sum,
                (_, op) => op,
            };
            if variant == 12 {
                h.root_rank = ranks + u16::from(arg % 8);
            }
        }
    }
}
