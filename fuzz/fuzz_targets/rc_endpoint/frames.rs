//! The Harness: virtual time, timers and the two fuzz-controlled links.

use epic_proto::testing::FrameBuilder;

use super::checks::check_emitted;
use super::*;

impl Harness {
    // --- time ------------------------------------------------------------

    pub(crate) fn deadline(&self) -> Option<Instant> {
        [self.s[0].qp.poll_timeout(), self.s[1].qp.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
    }

    pub(crate) fn advance_time(&mut self, cur: &mut Cursor<'_>) {
        let sel = cur.u8();
        let v = u64::from(cur.u16());
        let target = match sel % 5 {
            0 => self.now + Duration::from_nanos(v),
            1 => self.now + Duration::from_micros(v),
            2 => self.deadline().unwrap_or(self.now).max(self.now),
            // Just before the earliest deadline: handle_timeout must be a
            // no-op for that QP.
            3 => match self.deadline() {
                Some(d) if d > self.now => Instant::from_nanos(d.as_nanos() - 1),
                _ => self.now,
            },
            _ => self.now + Duration::from_millis(v),
        };
        self.now = target;
        self.run_timers();
    }

    /// `handle_timeout(now)` on both QPs, with the early-call and
    /// no-deadline-left checks.
    pub(crate) fn run_timers(&mut self) {
        let now = self.now;
        for side in &mut self.s {
            match side.qp.poll_timeout() {
                Some(d) if d > now => {
                    let before = side.qp.clone();
                    side.qp.handle_timeout(now);
                    assert!(
                        side.qp == before,
                        "{}: early handle_timeout changed the QP",
                        side.name
                    );
                }
                _ => side.qp.handle_timeout(now),
            }
            if let Some(d) = side.qp.poll_timeout() {
                assert!(
                    d > now,
                    "{}: deadline {d} <= now {now} after handle_timeout",
                    side.name
                );
            }
        }
    }

    // --- frames ----------------------------------------------------------

    /// Drains up to `max` frames (all for 0) from side `i` into its link.
    pub(crate) fn transmit(&mut self, i: usize, max: usize) -> usize {
        let mut n = 0;
        while max == 0 || n < max {
            let side = &mut self.s[i];
            let unacked = side.qp.unacked_psn();
            let in_error = side.in_error();
            let res = side.qp.poll_transmit(self.now, &mut side.tx_buf);
            let len = match res {
                Ok(Some(len)) => len,
                Ok(None) => break,
                Err(e) => panic!(
                    "{}: poll_transmit with a max_frame_len buffer: {e}",
                    side.name
                ),
            };
            assert!(len <= side.tx_buf.len(), "poll_transmit length");
            let frame = side.tx_buf[..len].to_vec();
            check_emitted(side, &frame, unacked, in_error);
            if tracing() {
                if let Ok(f) = RoceFrame::parse(&frame) {
                    eprintln!(
                        "    {} sends {:?} psn={} ack_req={} aeth={:?} len={}",
                        side.name,
                        f.bth.opcode,
                        f.bth.psn,
                        f.bth.ack_req,
                        f.ext.aeth,
                        f.payload.len()
                    );
                }
            }
            self.link[i].push_back(frame);
            n += 1;
            assert!(
                n < 100_000,
                "{}: poll_transmit never returns None",
                self.s[i].name
            );
        }
        n
    }

    /// Hands a frame to side `to`.
    pub(crate) fn inject(&mut self, to: usize, frame: &[u8]) {
        // Anything that passes the checks could change the QP's state in a
        // way its peer never caused: the clean-run checks no longer apply.
        if RoceFrame::parse_verified_transport(frame).is_ok() {
            self.clean = false;
        }
        self.hand(to, frame);
    }

    pub(crate) fn hand(&mut self, to: usize, frame: &[u8]) {
        let side = &mut self.s[to];
        side.rx_frames += 1;
        side.qp.handle_frame(self.now, frame);
    }

    pub(crate) fn deliver_pristine(&mut self, to: usize, frame: Vec<u8>) {
        self.hand(to, &frame);
        if self.history.len() >= HISTORY {
            self.history.pop_front();
        }
        self.history.push_back((to, frame));
    }

    pub(crate) fn deliver(&mut self, i: usize, cur: &mut Cursor<'_>) {
        let sel = cur.u8();
        let count = usize::from(sel >> 3) + 1;
        for _ in 0..count {
            let Some(frame) = self.link[i].pop_front() else {
                break;
            };
            match sel & 7 {
                0..=3 => self.deliver_pristine(1 - i, frame),
                4 => self.lossless = false, // dropped
                5 => {
                    self.lossless = false;
                    self.deliver_pristine(1 - i, frame.clone());
                    self.deliver_pristine(1 - i, frame);
                }
                6 => {
                    // To the back of the queue: reordered.
                    self.lossless = false;
                    self.link[i].push_back(frame);
                }
                _ => {
                    // Back to its sender: not addressed to it, dropped; for
                    // the peer it is lost.
                    self.lossless = false;
                    self.hand(i, &frame);
                }
            }
        }
    }

    /// A frame delivered earlier arrives again, late.
    pub(crate) fn replay(&mut self, cur: &mut Cursor<'_>) {
        let k = usize::from(cur.u8());
        if self.history.is_empty() {
            return;
        }
        let (to, frame) = self.history[k % self.history.len()].clone();
        self.lossless = false;
        self.hand(to, &frame);
    }

    /// Takes the next frame of link `i`, mutates it and delivers it to the
    /// peer (or, with bit 7 of the mode, back to its sender).
    pub(crate) fn mutate_and_deliver(&mut self, i: usize, cur: &mut Cursor<'_>) {
        let mode = cur.u8();
        let Some(original) = self.link[i].pop_front() else {
            return;
        };
        self.lossless = false;
        let mut frame = original.clone();
        match mode & 3 {
            0 => {
                // Flip bytes; the ICRC will mostly catch it.
                for _ in 0..(mode >> 2 & 3) + 1 {
                    let at = usize::from(cur.u16()) % frame.len().max(1);
                    if let Some(b) = frame.get_mut(at) {
                        *b ^= cur.u8() | 1;
                    }
                }
            }
            1 => {
                // Header rewrite with checksums fixed: a well-formed frame
                // with a different PSN, QP, AckReq or address.
                let mask = cur.u8();
                let psn_delta = cur.u8();
                let psn = RoceFrame::parse(&frame).map(|f| f.bth.psn).ok();
                let rw = HeaderRewrite {
                    psn: if mask & 1 != 0 {
                        psn.map(|p| p.add(u32::from(psn_delta)).sub(128))
                    } else {
                        None
                    },
                    ack_req: (mask & 2 != 0).then_some(mask & 4 != 0),
                    dest_qp: (mask & 8 != 0).then(|| qpn(u32::from(psn_delta))),
                    src_ip: (mask & 16 != 0).then(|| Ipv4Addr::new(10, 0, 0, psn_delta)),
                    fecn: (mask & 32 != 0).then_some(true),
                    becn: (mask & 64 != 0).then_some(true),
                    ..HeaderRewrite::default()
                };
                let _ = rewrite_headers(&mut frame, &rw);
            }
            2 => {
                // Edit a byte after the BTH (extension headers, payload),
                // then fix the checksums: a valid frame with, say, a
                // different syndrome, MSN, RETH or data.
                let at = usize::from(cur.u16()) % frame.len().max(1);
                if let Some(b) = frame.get_mut(at) {
                    *b = cur.u8();
                }
                let _ = refresh_checksums(&mut frame);
            }
            _ => {
                let n = usize::from(cur.u16()) % (frame.len() + 1);
                frame.truncate(n);
                if mode & 4 != 0 {
                    let _ = refresh_checksums(&mut frame);
                }
            }
        }
        let to = if mode & 0x80 != 0 { i } else { 1 - i };
        if frame == original && to != i {
            self.deliver_pristine(to, frame);
        } else {
            self.inject(to, &frame);
        }
    }

    /// A valid frame for side `to`, synthesized from the input, with its
    /// PSN near the QP's window.
    pub(crate) fn inject_synthesized(&mut self, to: usize, cur: &mut Cursor<'_>) {
        let side = &self.s[to];
        let cfg = *side.qp.config();
        let flags = cur.u8();
        let ob = cur.u8();
        let opcode = if ob < 0xc0 {
            // The RC opcodes, 0x00..=0x17 without the reserved 0x15.
            let v = ob % 23;
            Opcode::from(if v >= 0x15 { v + 1 } else { v })
        } else {
            Opcode::from(cur.u8())
        };
        let psn_sel = cur.u8();
        let delta = i32::from(cur.u8() as i8);
        let base = match psn_sel & 3 {
            0 => side.qp.expected_psn(),
            1 => side.qp.unacked_psn(),
            2 => side.qp.send_psn(),
            _ => Psn::from_truncated(cur.u24()),
        };
        let psn = if delta >= 0 {
            base.add(delta as u32)
        } else {
            base.sub(delta.unsigned_abs())
        };
        let mtu = cfg.mtu.bytes() as usize;
        let len_sel = cur.u8();
        let layout = opcode.layout().unwrap_or_default();
        let payload_len = if !layout.payload && len_sel & 0x80 == 0 {
            0
        } else {
            match len_sel & 3 {
                0 => mtu,
                1 => usize::from(len_sel >> 2),
                2 => usize::from(cur.u16()) % (mtu + 64),
                _ => mtu - usize::from(len_sel >> 2 & 7),
            }
        };
        let payload: Vec<u8> = (0..payload_len).map(|i| (i as u8) ^ len_sel).collect();

        let reth = layout.reth.then(|| {
            let rsel = cur.u8();
            let rkey = match side.regions.get(usize::from(rsel & 3)) {
                Some(r) if rsel & 0x80 == 0 => r.rkey,
                _ => Rkey(cur.u32()),
            };
            let region = side.regions.iter().find(|r| r.rkey == rkey);
            let va = match region {
                Some(r) if rsel & 0x40 == 0 => {
                    r.va.wrapping_add(u64::from(cur.u16()) % (r.len as u64 + 2))
                }
                _ => cur.u64(),
            };
            let dma_len = match (rsel >> 4) & 3 {
                0 => payload_len as u32,
                1 => (mtu * (usize::from(rsel & 3) + 1)) as u32 + u32::from(cur.u8() & 3),
                _ => cur.u32() % 0x4000,
            };
            RethRepr {
                va,
                rkey: rkey.0,
                dma_len,
            }
        });
        let aeth = layout.aeth.then(|| AethRepr {
            syndrome: Syndrome::from(cur.u8()),
            msn: cur.u24(),
        });
        let immdt = layout.immdt.then(|| ImmDtRepr(cur.u32()));
        let ext = ExtHeaders {
            deth: layout.deth.then_some(DethRepr {
                qkey: 0x1111_1111,
                src_qp: cfg.remote_qpn,
            }),
            reth,
            atomic_eth: layout.atomic_eth.then_some(AtomicEthRepr {
                va: 0,
                rkey: 0,
                swap_add: 1,
                compare: 0,
            }),
            aeth,
            atomic_ack_eth: layout.atomic_ack_eth.then_some(AtomicAckEthRepr {
                orig_remote_data: 7,
            }),
            immdt,
            ieth: layout.ieth.then_some(IethRepr { rkey: 1 }),
            cnp: layout.cnp.then_some(CnpRepr),
        };
        let path = cfg.path;
        let vlan = (flags & 0x10 != 0).then(|| VlanTag {
            pcp: VlanPcp::try_new(0).unwrap_or_else(|_| unreachable!()),
            dei: false,
            vid: VlanId::try_new(7).unwrap_or_else(|_| unreachable!()),
        });
        let frame = FrameBuilder::new(opcode)
            .dst_mac(path.local_mac)
            .src_mac(path.remote_mac)
            .vlan(vlan)
            .src_ip(if flags & 2 != 0 {
                Ipv4Addr::new(10, 9, 9, 9)
            } else {
                path.remote_ip
            })
            .dst_ip(if flags & 1 != 0 {
                Ipv4Addr::new(10, 8, 8, 8)
            } else {
                path.local_ip
            })
            .tos(Dscp::default(), Ecn::from_bits(flags >> 6))
            .ident(0)
            .src_port(0xc000)
            .pad_count(if flags & 0x80 != 0 && flags & 0x40 != 0 {
                (len_sel >> 5) & 3
            } else {
                BthRepr::pad_for(payload_len)
            })
            .pkey(if flags & 8 != 0 {
                cfg.pkey ^ 0x0001
            } else {
                cfg.pkey
            })
            .dest_qp(if flags & 4 != 0 {
                qpn(cfg.local_qpn.value() ^ 1)
            } else {
                cfg.local_qpn
            })
            .ack_req(flags & 0x20 != 0)
            .psn(psn)
            .ext(ext)
            .payload(&payload);
        match frame.try_build() {
            Ok(buf) => self.inject(to, &buf),
            Err(e) => panic!(
                "emit of a synthesized frame failed: {e:?} ({:?})",
                frame.repr()
            ),
        }
    }

    /// Lossless exchange for up to `rounds` rounds.
    pub(crate) fn pump(&mut self, rounds: usize) -> bool {
        for _ in 0..rounds {
            let mut moved = 0;
            for i in 0..2 {
                moved += self.transmit(i, 0);
                while let Some(f) = self.link[i].pop_front() {
                    self.deliver_pristine(1 - i, f);
                    moved += 1;
                }
            }
            if moved == 0 {
                return true;
            }
        }
        false
    }
}
