#!/usr/bin/env python3
"""Writes the handcrafted seeds of the `inc_engine` fuzz target into
fuzz/seeds/inc_engine/. The byte layout is documented in
fuzz_targets/inc_engine/ (`Harness::new` in setup.rs, `Harness::step` in
ops.rs and each operation). Every seed runs complete invocations: control
messages from every rank, the echo, data from every sender and the peers'
ACKs, so that the fuzzer starts from deep engine states; check with
INC_TRACE=1 that the last line shows aggr > 0.

Run from anywhere: python3 fuzz/gen_inc_engine_seeds.py
(--oversize: write the reproducers of OVERSIZE to fuzz/artifacts/inc_engine/)
"""
import os
import struct
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds", "inc_engine")

# Operation numbers (`op % 11`).
BEGIN, CONTROL, DATA, ACK, PUMP, TRANSMIT, TIME, RAW, MUTATE, REPLAY, MISDELIVER = range(11)

ALL_REDUCE, REDUCE, BROADCAST, BARRIER = range(4)
SUM, MIN, MAX = 0, 1, 2
INT32, FP32, FP16, BF16 = range(4)
# Setup: U index (PAYLOADS in setup.rs).
U256, U1024, U64, U4096 = range(4)
STAR, LEAF, ROOT_OVER_CHILD = 0, 2, 3


def u16(v):
    return struct.pack(">H", v)


# Extended setup: how a context realizes EPIC (`realization` in setup.rs).
RESYNC, PER_PATTERN, MODE1, MODE1_BOUND = range(4)
OTHER = 0x40
HUGE = -1
B_ALL_REDUCE, B_REDUCE, B_BROADCAST = range(3)


def ext(real=RESYNC, binding=B_ALL_REDUCE, root=0):
    return real | (binding << 2) | (root << 4)


def setup(mode3, k, slots_exp=2, repro=False, u=U256, queue=0, cnp=False, topo=STAR,
          psn=(0, 0), timeout=0, second=None, x0=None, x1=0, m_sel=0, window=2, credits=0,
          shared=False):
    """slots: N = 4 << slots_exp. psn: (selector, low) as `Cursor::psn`
    reads it (1: just below the 2^24 wrap). second: None or (other_mode,
    k2, wrap_steps) for a second context. x0/x1: the extended setup (see
    `ext`; N is then 16), with Mode I's M (`MESSAGE_PACKETS[m_sel]`), W and
    peer credits (`PEER_CREDITS[credits]`). shared: both contexts in one
    shared block (N = 8; needs `second`) [TMX-001]."""
    if shared:
        assert second is not None
        slots_exp = 6
        x0 = RESYNC if x0 is None else x0
    elif x0 is not None:
        slots_exp = 7
    b0 = (1 if mode3 else 0) | ((k - 2) << 1) | (slots_exp << 4) | (0x80 if repro else 0)
    b1 = u | (queue << 3) | (0x20 if cnp else 0) | (topo << 6)
    b4 = timeout
    b5 = 0
    if second is not None:
        other, k2, wrap = second
        b4 |= 4 | (8 if other else 0) | ((k2 - 2) << 4)
        b5 = wrap
    out = bytes([b0, b1, *psn, b4, b5])
    if x0 is not None:
        out += bytes([x0, x1, m_sel | ((window - 1) << 3) | (credits << 6)])
    return out


def begin(coll, op=SUM, dtype=INT32, packets=4, size_sel=0, last=255, root=0,
          repro=False, ctx=0, jump=0):
    """On a per-pattern context: the pattern's own collective (BARRIER:
    a barrier) unless root has bit 6 (OTHER | r: `coll` rooted at r).
    packets=HUGE: 2^23 - 1 packets."""
    sel = coll | (op << 2) | (dtype << 4) | (0x40 if repro else 0) | (0x80 if ctx else 0)
    count = 254 if packets == HUGE else 0 if packets == 0 else packets - 1
    return bytes([BEGIN, sel, count, size_sel, last, root, jump])


# A Barrier's op selects its lock flags [TMX-010] [TMX-013].
ACQUIRE, RELEASE = MIN, MAX


def controls(ctx=0, ep=15, variant=0, arg=0):
    """Control messages from endpoint `ep` (15: every child)."""
    return bytes([CONTROL, ep | (0x80 if ctx else 0), variant, arg])


def data_all(ctx=0, ep=15, variant=0, arg=0):
    """Every block from endpoint `ep` (15: every sender)."""
    return bytes([DATA, ep | 0x10 | (0x80 if ctx else 0), 0, variant, arg])


def data_one(ep, block, ctx=0, variant=0, arg=0):
    return bytes([DATA, ep | (0x80 if ctx else 0), block, variant, arg])


def ack(ep, psn_sel=1, syn=0, arg=0, ctx=0):
    return bytes([ACK, ep | (0x80 if ctx else 0), psn_sel, syn, arg])


def pump(rounds=16, timers=True, loss=0):
    """loss L > 0: every (L + 1)-th frame the switch sends is lost."""
    return bytes([PUMP, (rounds - 1) | (loss << 4) | (0x80 if timers else 0)])


def transmit(n=0):
    return bytes([TRANSMIT, n])


def advance(sel=2, v=0):
    """sel 2: to the earliest deadline; 3: just before it; 0 ns, 1 us, 4 ms."""
    return bytes([TIME, sel]) + u16(v)


def invocation(coll, ctx=0, **kw):
    """Begin, controls from every rank, the echo, data from every sender,
    ACKs: one complete invocation."""
    b = begin(coll, ctx=ctx, **kw) + controls(ctx) + pump()
    if coll != BARRIER:
        b += data_all(ctx) + pump()
    return b


SEEDS = {
    "allreduce_m2": setup(False, 4) + invocation(ALL_REDUCE, packets=4)
    + invocation(ALL_REDUCE, op=MAX, packets=2, size_sel=4),
    "allreduce_m3": setup(True, 4, slots_exp=2) + invocation(ALL_REDUCE, packets=4)
    + invocation(ALL_REDUCE, op=MIN, dtype=FP32, packets=3),
    "reduce_broadcast_m2": setup(False, 3) + invocation(REDUCE, op=MAX, root=1, packets=3)
    + invocation(BROADCAST, dtype=FP16, root=0, packets=3),
    "reduce_m3_repro": setup(True, 5, slots_exp=3, repro=True)
    + invocation(REDUCE, root=2, packets=5, repro=True),
    "broadcast_m3": setup(True, 6, slots_exp=1, u=U1024)
    + invocation(BROADCAST, dtype=FP32, root=3, packets=6),
    "barrier_two_contexts": setup(False, 3, second=(True, 4, 1))
    + invocation(BARRIER) + invocation(BARRIER, ctx=1)
    + invocation(ALL_REDUCE, ctx=1, packets=2) + invocation(ALL_REDUCE, packets=2),
    # PSNs start 2 below the wrap; 8 packets through a window of 4 slots.
    "allreduce_m3_wrap": setup(True, 3, slots_exp=0, psn=(1, 1))
    + invocation(ALL_REDUCE, packets=8, size_sel=3) + pump(),
    # A leaf under a parent switch: the harness's parent echoes.
    "leaf_m3": setup(True, 6, topo=LEAF) + invocation(ALL_REDUCE, packets=3)
    + invocation(BROADCAST, root=5, packets=2),
    "root_over_child_m2": setup(False, 5, topo=ROOT_OVER_CHILD)
    + invocation(ALL_REDUCE, packets=2) + invocation(REDUCE, root=4, packets=2),
    # Controls the engine must refuse (collective 5 and 6, a root outside
    # the group, quantized, another group, an invalid header, no EPIC tag),
    # then loss and recovery in Mode III: rank 1's block 1 arrives with the
    # wrong length, the switch NAKs, the rank goes back; a replay, a
    # mutation, a frame on the wrong port; the retransmission timer.
    "faults_m3": setup(True, 3, slots_exp=2, cnp=True, timeout=1)
    + begin(ALL_REDUCE, packets=3)
    + controls(ep=0, variant=9) + controls(ep=1, variant=10) + controls(ep=2, variant=12, arg=1)
    + controls(ep=0, variant=11) + controls(ep=1, variant=8) + controls(ep=2, variant=13)
    + controls(ep=0, variant=14) + controls() + pump()
    + data_one(0, 0) + data_one(0, 1) + data_one(0, 2) + data_one(1, 0) + data_one(1, 2)
    + data_one(2, 0) + data_one(2, 1) + data_one(2, 2)
    + data_one(1, 1, variant=5 << 3, arg=4)
    + bytes([REPLAY, 3]) + bytes([MUTATE, 2, 1]) + u16(40) + bytes([0x55])
    + bytes([MISDELIVER, 1, 0, 3])
    + pump(timers=False) + transmit(1) + advance(3) + advance(2) + pump(),
    # Mode III with lossy links: every third frame from the switch is lost;
    # NAKs and the retransmission timer recover.
    "lossy_m3": setup(True, 4, slots_exp=2, timeout=1) + begin(ALL_REDUCE, packets=6)
    + controls() + pump(loss=2) + data_all() + pump(loss=2) + pump(),
    # Mode II with a tiny output queue and RNR / NAK responses.
    "faults_m2": setup(False, 4, queue=1) + begin(ALL_REDUCE, packets=4) + controls() + pump()
    + data_all() + transmit(2) + ack(0, syn=4) + ack(1, syn=5 | (3 << 3)) + pump()
    + data_all() + pump(),
    # Per-pattern contexts [CTL-050]: a Reduce-to-rank-1 context runs its
    # pattern and a Barrier, refuses an AllReduce (which takes no PSNs),
    # and translates the PSNs of the root's control-only direction.
    "per_pattern_reduce_m3": setup(True, 4, x0=ext(PER_PATTERN, B_REDUCE, 1))
    + invocation(REDUCE, packets=3) + begin(ALL_REDUCE, root=OTHER, packets=2) + controls()
    + pump() + invocation(BARRIER) + invocation(REDUCE, op=MAX, packets=2),
    "per_pattern_broadcast_m2_leaf": setup(False, 6, topo=LEAF,
                                           x0=ext(PER_PATTERN, B_BROADCAST, 1))
    + invocation(BROADCAST, dtype=FP32, packets=3) + invocation(BROADCAST, packets=2)
    + invocation(REDUCE, root=OTHER | 1, packets=1) + invocation(BROADCAST, packets=1),
    "per_pattern_allreduce_m3_wrap": setup(True, 3, psn=(1, 1),
                                           x0=ext(PER_PATTERN, B_ALL_REDUCE))
    + invocation(ALL_REDUCE, packets=4) + invocation(ALL_REDUCE, op=MIN, packets=2) + pump(),
    # Mode I [M1-001]: RC peers on every edge, messages of M packets.
    "allreduce_m1": setup(False, 4, x0=ext(MODE1), m_sel=1, window=2)
    + invocation(ALL_REDUCE, packets=6) + invocation(ALL_REDUCE, op=SUM, dtype=FP32, packets=3),
    "reduce_broadcast_m1_leaf": setup(False, 6, topo=LEAF, u=U1024, x0=ext(MODE1), m_sel=3,
                                      window=1, credits=2)
    + invocation(REDUCE, root=4, packets=5) + invocation(BROADCAST, dtype=FP16, root=1, packets=4)
    + invocation(ALL_REDUCE, op=MAX, packets=3),
    "root_over_child_m1": setup(False, 5, topo=ROOT_OVER_CHILD, x0=ext(MODE1), m_sel=2)
    + invocation(ALL_REDUCE, dtype=BF16, packets=4) + invocation(BARRIER)
    + invocation(REDUCE, root=4, packets=2),
    # Lossy links, a peer with one receive (RNR), the retransmission timer.
    "lossy_m1": setup(False, 3, timeout=1, x0=ext(MODE1), m_sel=6, window=3, credits=1)
    + begin(ALL_REDUCE, packets=9) + controls() + pump(loss=2) + data_all() + pump(loss=2)
    + pump() + pump(),
    # Twelve one-packet messages per rank at once: the switch's endpoints
    # queue more ACKs than they hold and coalesce them; each message still
    # counts once (rx_data, not also `transport`) [M1-040].
    "m1_coalesced_acks": setup(False, 2, x0=ext(MODE1), m_sel=0, window=8, credits=3)
    + invocation(ALL_REDUCE, packets=12),
    # A leaf under a parent switch, W = 2, one-packet messages [M1-022]:
    # Reduce Z toward rank 3 (behind the parent) loses its second result on
    # the way up, so Reduce A's second message waits for that result
    # buffer; the ranks, acknowledged, go on with AllReduce B. One ACK of
    # the parent then frees both result buffers: A's last message goes up,
    # and B's first must not overtake B's control, which waited behind A
    # (the parent would count it as A's third message).
    "m1_leaf_control_before_data": setup(False, 4, topo=LEAF, x0=ext(MODE1), m_sel=0, window=2)
    + begin(REDUCE, root=3, packets=2) + controls() + pump()
    + data_all() + pump(rounds=1, loss=5, timers=False)
    + begin(REDUCE, root=3, packets=2) + controls() + pump(rounds=1, timers=False)
    + data_all() + begin(ALL_REDUCE, packets=1) + controls() + data_all()
    + pump(rounds=1, timers=False) + ack(2, psn_sel=2, syn=0) + pump(),
    # Mode I bound to Broadcast from rank 2 next to a per-pattern Mode III
    # context: refuses the other collectives [CTL-050].
    "m1_bound_and_m3": setup(False, 3, second=(True, 4, 2),
                             x0=ext(MODE1_BOUND, B_BROADCAST, 2), x1=ext(PER_PATTERN, B_REDUCE, 3))
    + invocation(BROADCAST, packets=2) + begin(ALL_REDUCE, root=OTHER, packets=2) + controls()
    + pump() + invocation(REDUCE, packets=3, ctx=1) + invocation(BROADCAST, packets=1),
    # Temporal multiplexing [TMX-010]...[TMX-013]: two contexts share a
    # block. Context 0 takes it and runs an AllReduce; context 1's acquire
    # is denied, its data refused (not_granted); context 0 releases;
    # context 1 takes the block and runs.
    "temporal_m2_m3": setup(False, 3, second=(True, 4, 1), shared=True)
    + invocation(BARRIER, op=ACQUIRE) + invocation(ALL_REDUCE, packets=2)
    + invocation(BARRIER, op=ACQUIRE, ctx=1)
    + begin(ALL_REDUCE, packets=1, ctx=1) + controls(ctx=1) + pump() + data_all(ctx=1) + pump()
    + invocation(BARRIER, op=RELEASE)
    + invocation(BARRIER, op=ACQUIRE, ctx=1) + invocation(ALL_REDUCE, packets=2, ctx=1)
    + invocation(BARRIER, op=RELEASE, ctx=1),
    # The same on a Mode I leaf (the harness's parent echoes), next to a
    # Mode III context in the block.
    "temporal_m1_leaf": setup(False, 4, topo=LEAF, second=(True, 3, 0), shared=True,
                              x0=ext(MODE1), m_sel=1, window=2)
    + invocation(BARRIER, op=ACQUIRE, ctx=1) + invocation(ALL_REDUCE, packets=2, ctx=1)
    + invocation(BARRIER, op=ACQUIRE) + invocation(BARRIER, op=RELEASE, ctx=1)
    + invocation(BARRIER, op=ACQUIRE) + invocation(ALL_REDUCE, packets=3)
    + invocation(BARRIER, op=RELEASE),
}


# Reproducers of a fixed engine issue, kept as seeds [CTL-054].
#
# A per-pattern Reduce-to-rank-0 context (Mode II, K = 2, start PSN 0) and
# three invocations of 2^23 - 1 packets: the third's group control PSN is
# 2^24 = 0, its data range [1, 2^23); rank 0's direction carries only
# controls, whose wire PSN is 2 [CTL-051]: inside that range. The engine
# judged rule 10 [WIRE-121] on that wire PSN and dropped the control as
# bad_control, and rank 1's echo (wire PSN 2 as well) failed
# `RoceFrame::parse_verified`; it now judges the group PSN.
#
# The same context, start PSN 10: the ranks' first control messages come
# one PSN early (9, first data PSN 10; contradicting variant 15, arg 3).
# The engine took a first control at any PSN, so the echo toward rank 1
# carried wire PSN 10, inside its own range; it now refuses a first
# control away from the start PSN (control_out_of_order).
FIXED_PER_PATTERN = {
    "per_pattern_wire_psn_wrap": setup(False, 2, x0=ext(PER_PATTERN, B_REDUCE, 0))
    + begin(REDUCE, packets=HUGE) + controls() + pump()
    + begin(REDUCE, packets=HUGE) + controls() + pump()
    + begin(REDUCE, packets=HUGE) + controls(ep=1) + pump() + controls(ep=0) + pump(),
    "per_pattern_first_control_early": setup(False, 2, psn=(0, 10),
                                             x0=ext(PER_PATTERN, B_REDUCE, 0))
    + begin(REDUCE, packets=1) + controls(variant=15, arg=3) + transmit(),
}
SEEDS.update(FIXED_PER_PATTERN)

# Reproducers of a fixed engine issue: a
# control message announcing 260 payload bytes per packet on a context
# with U = 256 is accepted; the engine then sends 260-byte payloads (Mode
# II AllReduce, Mode III Reduce) or completes the aggregation and never
# hands it to the Down pipe, with no timer armed (Mode III AllReduce).
OVERSIZE = {
    "oversize-mode2-allreduce": setup(False, 2)
    + begin(ALL_REDUCE, packets=1, size_sel=5, last=64) + controls() + data_all() + transmit(),
    "oversize-mode3-reduce": setup(True, 2)
    + begin(REDUCE, packets=1, size_sel=5, root=1, last=64) + controls() + pump()
    + data_all() + transmit(),
    "oversize-mode3-allreduce-stall": setup(True, 2)
    + begin(ALL_REDUCE, packets=1, size_sel=5, last=64) + controls() + pump()
    + data_all() + pump(),
}


def write(out, inputs):
    os.makedirs(out, exist_ok=True)
    for name, data in inputs.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(inputs)} inputs to {out}")


def main():
    artifacts = os.path.normpath(os.path.join(OUT, "..", "..", "artifacts", "inc_engine"))
    if "--oversize" in sys.argv[1:]:
        write(artifacts, OVERSIZE)
    else:
        write(OUT, SEEDS)


if __name__ == "__main__":
    main()
