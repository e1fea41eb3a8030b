//! The Harness: construction, the operation dispatch and the commands (posts, regions, resync).

use super::*;

impl Harness {
    pub(crate) fn new(cur: &mut Cursor<'_>) -> Option<Harness> {
        let (a, b) = configs(cur)?;
        if tracing() {
            eprintln!("A: {a:?}\nB: {b:?}");
        }
        Some(Harness {
            s: [Side::new("A", a)?, Side::new("B", b)?],
            link: [VecDeque::new(), VecDeque::new()],
            history: VecDeque::new(),
            now: Instant::ZERO,
            next_wr: 1,
            clean: true,
            lossless: true,
        })
    }

    pub(crate) fn wr_id(&mut self) -> u64 {
        self.next_wr += 1;
        self.next_wr
    }

    /// One operation; returns its name for assertion messages.
    pub(crate) fn step(&mut self, op: u8, cur: &mut Cursor<'_>) -> &'static str {
        let side = usize::from(op >> 7);
        match op % 14 {
            0 => {
                self.post_send(side, cur);
                "post_send"
            }
            1 => {
                self.post_recv(side, cur);
                "post_recv"
            }
            2 => {
                self.register_region(side, cur);
                "register_region"
            }
            3 => {
                self.deregister_region(side, cur);
                "deregister_region"
            }
            4 => {
                self.resync(side, cur);
                "resync"
            }
            5 => {
                self.advance_time(cur);
                "advance_time"
            }
            6 => {
                let max = usize::from(cur.u8() % 8);
                self.transmit(side, max);
                "poll_transmit"
            }
            7 => {
                self.deliver(side, cur);
                "deliver"
            }
            8 => {
                let max = usize::from(cur.u8() % 4);
                self.poll_completions(side, max);
                "poll_completion"
            }
            9 => {
                self.inject_synthesized(side, cur);
                "inject_synthesized"
            }
            10 => {
                let len = usize::from(cur.u16() % 2048);
                let bytes = cur.bytes(len).to_vec();
                self.inject(side, &bytes);
                "inject_raw"
            }
            11 => {
                let rounds = usize::from(cur.u8() % 8) + 1;
                self.pump(rounds);
                "pump"
            }
            12 => {
                self.replay(cur);
                "replay"
            }
            _ => {
                self.mutate_and_deliver(side, cur);
                "mutate"
            }
        }
    }

    // --- commands --------------------------------------------------------

    pub(crate) fn post_send(&mut self, i: usize, cur: &mut Cursor<'_>) {
        let kind = cur.u8();
        let len = {
            let mtu = self.s[i].qp.config().mtu.bytes() as usize;
            let v = usize::from(cur.u16());
            match kind >> 4 & 3 {
                0 => v & 0xff,
                1 => v % (MAX_MSG + 1),
                2 => mtu * (v % 4 + 1),
                _ => (mtu * (v % 3 + 1) + (v >> 8) % 3).saturating_sub(1),
            }
            .min(MAX_MSG)
        };
        let imm = if kind & 0x40 != 0 {
            cur.u32()
        } else {
            0x1234_5678
        };
        let mut remote = || {
            let rsel = cur.u8();
            let peer = &self.s[1 - i];
            let rkey = if rsel & 0x80 != 0 {
                Rkey(cur.u32())
            } else {
                Rkey(u32::from(rsel & 3))
            };
            let off = u64::from(cur.u16());
            let va = match peer.regions.iter().find(|r| r.rkey == rkey) {
                Some(r) if rsel & 0x40 == 0 => r.va.wrapping_add(off % (r.len as u64 + 2)),
                _ => cur.u64(),
            };
            RemoteAddr { va, rkey }
        };
        let op = match kind & 3 {
            0 => SendOp::Send,
            1 => SendOp::SendWithImm { imm },
            2 => SendOp::Write { remote: remote() },
            _ => SendOp::WriteWithImm {
                remote: remote(),
                imm,
            },
        };
        let wr_id = self.wr_id();
        let side = &mut self.s[i];
        let cfg = *side.qp.config();
        let max = u64::from(cfg.max_msg_bytes).min(u64::from(cfg.mtu.bytes()) << 22);
        let expect_err = if side.in_error() {
            Some(ApiError::QpInError)
        } else if side.sends.len() >= usize::from(cfg.sq_depth) {
            Some(ApiError::SendQueueFull {
                depth: cfg.sq_depth,
            })
        } else if len as u64 > max {
            Some(ApiError::MessageTooLong {
                len: len as u64,
                max,
            })
        } else {
            None
        };
        match side.qp.post_send(WrId(wr_id), op, pattern(wr_id, len)) {
            Ok(()) => {
                assert_eq!(expect_err, None, "{}: post_send accepted", side.name);
                side.sends.push_back(PostedSend {
                    wr_id,
                    len,
                    write: op.is_write(),
                });
                if matches!(op, SendOp::Send | SendOp::SendWithImm { .. }) || op.imm().is_some() {
                    side.to_deliver.push_back(Expected {
                        wr_id,
                        len,
                        imm: op.imm(),
                        write: op.is_write(),
                    });
                }
            }
            Err(e) => {
                assert_eq!(Some(e.error), expect_err, "{}: post_send error", side.name);
                assert_eq!(e.buf.len(), len, "post_send error: buffer length");
                assert!(is_pattern(&e.buf, wr_id), "post_send error: buffer changed");
            }
        }
    }

    pub(crate) fn post_recv(&mut self, i: usize, cur: &mut Cursor<'_>) {
        let sel = cur.u8();
        let mtu = self.s[i].qp.config().mtu.bytes() as usize;
        let len = match sel & 3 {
            0 => usize::from(sel >> 2),
            1 => mtu * usize::from(sel >> 2 & 3) + usize::from(sel >> 4),
            2 => SETTLE_RECV,
            _ => usize::from(cur.u16()) % (MAX_MSG + 64),
        };
        let wr_id = self.wr_id();
        self.post_recv_len(i, wr_id, len);
    }

    /// Posts a receive of `len` bytes and checks the outcome; returns whether
    /// it was accepted.
    pub(crate) fn post_recv_len(&mut self, i: usize, wr_id: u64, len: usize) -> bool {
        let side = &mut self.s[i];
        let cfg = *side.qp.config();
        let expect_err = if side.in_error() {
            Some(ApiError::QpInError)
        } else if side.recvs.len() >= usize::from(cfg.rq_depth) {
            Some(ApiError::RecvQueueFull {
                depth: cfg.rq_depth,
            })
        } else {
            None
        };
        match side.qp.post_recv(WrId(wr_id), vec![0xee; len]) {
            Ok(()) => {
                assert_eq!(expect_err, None, "{}: post_recv accepted", side.name);
                side.recvs.push_back(PostedRecv { wr_id, len });
                true
            }
            Err(e) => {
                assert_eq!(Some(e.error), expect_err, "{}: post_recv error", side.name);
                assert_eq!(e.buf, vec![0xee; len], "post_recv error: buffer changed");
                false
            }
        }
    }

    pub(crate) fn register_region(&mut self, i: usize, cur: &mut Cursor<'_>) {
        let sel = cur.u8();
        let rkey = if sel & 0x80 != 0 {
            Rkey(cur.u32())
        } else {
            Rkey(u32::from(sel & 3))
        };
        let len = usize::from(cur.u16()) % (MAX_MSG + 64);
        let va = match (sel >> 2) & 7 {
            0 => 0,
            1 => 0x1000,
            2 => 0x1_0000_0000 - (len as u64) / 2,
            3 => u64::MAX - u64::from(cur.u16()),
            4 => (u64::MAX - len as u64).wrapping_add(1),
            _ => cur.u64(),
        };
        let side = &mut self.s[i];
        let max = side.qp.config().max_regions;
        let expect_err = if side.regions.iter().any(|r| r.rkey == rkey) {
            Some(ApiError::DuplicateRkey { rkey: rkey.0 })
        } else if side.regions.len() >= usize::from(max) {
            Some(ApiError::RegionTableFull { max })
        } else if va.checked_add(len as u64).is_none() {
            Some(ApiError::RegionOverflow)
        } else {
            None
        };
        match side.qp.register_region(rkey, va, vec![0x5a; len]) {
            Ok(()) => {
                assert_eq!(expect_err, None, "{}: register_region accepted", side.name);
                side.regions.push(RegionInfo { rkey, va, len });
            }
            Err(e) => {
                assert_eq!(Some(e.error), expect_err, "{}: register_region", side.name);
                assert_eq!(e.buf, vec![0x5a; len], "register_region: buffer changed");
            }
        }
        if let Some(r) = side.regions.iter().find(|r| r.rkey == rkey) {
            let len = side.qp.region(rkey).map(Vec::len);
            assert_eq!(len, Some(r.len), "region() length");
        }
    }

    pub(crate) fn deregister_region(&mut self, i: usize, cur: &mut Cursor<'_>) {
        let sel = cur.u8();
        let side = &mut self.s[i];
        let rkey = match side.regions.get(usize::from(sel) % 4) {
            Some(r) if sel & 0x80 == 0 => r.rkey,
            _ => Rkey(u32::from(sel & 3)),
        };
        let pos = side.regions.iter().position(|r| r.rkey == rkey);
        let got = side.qp.deregister_region(rkey);
        match pos {
            Some(p) => {
                let r = side.regions.swap_remove(p);
                assert_eq!(got.map(|b| b.len()), Some(r.len), "deregister_region");
            }
            None => assert!(got.is_none(), "deregister_region of an unknown rkey"),
        }
        assert!(side.qp.region(rkey).is_none(), "region still there");
    }

    pub(crate) fn resync(&mut self, i: usize, cur: &mut Cursor<'_>) {
        let mode = cur.u8();
        let pick = |cur: &mut Cursor<'_>, cur_psn: Psn| match mode & 3 {
            0 => cur_psn,
            1 => cur_psn.add(u32::from(cur.u8())),
            _ => cur.psn(),
        };
        let send = pick(cur, self.s[i].qp.send_psn());
        let expected = pick(cur, self.s[i].qp.expected_psn());
        // Symmetric: the peer's send PSN is our expected PSN and vice versa,
        // after both links and transmit queues are flushed (as a driver does
        // around Mode II alignment). One-sided otherwise.
        let symmetric = mode & 0x80 == 0;
        if symmetric {
            self.flush();
        }
        let ok = self.resync_one(i, send, expected);
        if symmetric {
            if ok {
                let peer_ok = self.resync_one(1 - i, expected, send);
                if !peer_ok {
                    self.clean = false;
                }
            }
        } else if ok {
            self.clean = false;
        }
    }

    pub(crate) fn resync_one(&mut self, i: usize, send: Psn, expected: Psn) -> bool {
        let side = &mut self.s[i];
        let outstanding = side.qp.outstanding_sends();
        let res = side.qp.resync(send, expected);
        match res {
            Ok(()) => {
                assert!(!side.in_error(), "resync accepted in error");
                assert_eq!(outstanding, 0, "resync accepted with sends outstanding");
                assert_eq!(side.qp.send_psn(), send, "resync: send PSN");
                assert_eq!(side.qp.unacked_psn(), send, "resync: unacked PSN");
                assert_eq!(side.qp.expected_psn(), expected, "resync: expected PSN");
                true
            }
            Err(ResyncError::QpInError) => {
                assert!(side.in_error(), "resync: QpInError while ready");
                false
            }
            Err(ResyncError::SendsOutstanding { count }) => {
                assert!(!side.in_error());
                assert!(count > 0 && count == outstanding, "resync: count");
                false
            }
            Err(ResyncError::RnrWait | ResyncError::ReceiveInProgress) => {
                assert!(!side.in_error());
                assert_eq!(outstanding, 0, "resync: error order");
                false
            }
            Err(e) => panic!("resync: unexpected error {e:?}"),
        }
    }

    /// Drops everything on the links and in both transmit queues.
    pub(crate) fn flush(&mut self) {
        for i in 0..2 {
            self.transmit(i, 0);
            if !self.link[i].is_empty() {
                self.lossless = false;
            }
            self.link[i].clear();
        }
        self.history.clear();
    }
}
