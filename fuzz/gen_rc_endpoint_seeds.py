#!/usr/bin/env python3
"""Writes the handcrafted seeds of the `rc_endpoint` fuzz target into
fuzz/seeds/rc_endpoint/. The byte layout is documented in
fuzz_targets/rc_endpoint.rs (`configs`, `Harness::step` and each operation).

Run from anywhere: python3 fuzz/gen_rc_endpoint_seeds.py
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds", "rc_endpoint")

# Operation numbers (`op % 14`); bit 7 of the op byte picks side B.
POST_SEND, POST_RECV, REGISTER, DEREGISTER, RESYNC, ADVANCE, TRANSMIT, DELIVER, \
    POLL, SYNTH, RAW, PUMP, REPLAY, MUTATE = range(14)

SEND, SEND_IMM, WRITE, WRITE_IMM = range(4)


def op(n, side=0):
    """The op byte for operation `n` on side 0 (A) or 1 (B)."""
    if side == 0:
        return bytes([n])
    for b in range(0x80, 0x100):
        if b % 14 == n:
            return bytes([b])
    raise ValueError(n)


def u16(v):
    return struct.pack(">H", v)


def u32(v):
    return struct.pack(">I", v)


def u64(v):
    return struct.pack(">Q", v)


def config(mtu=0, psn_a=(0, 0), psn_b=(0, 0), timeout=0, retry=0x3f, rnr_timer=0x01,
           depth_a=0x7f, depth_b=0x7f, window=0, msg=0):
    """12 config bytes. mtu: index 0..4 (256..4096). psn_*: (selector, low)
    as read by `Cursor::psn` (selector 1 = just below the 2^24 wrap).
    timeout: index in TIMEOUTS (0 -> exponent 4). retry: retry_cnt |
    rnr_retry << 3 (0x3f: both 7, unlimited). rnr_timer: min_rnr_timer |
    (response_depth - 1) << 5. depth: sq-1 | (rq-1) << 3 | regions << 6.
    window: max_unacked_psns index | ack_req_every index << 3. msg:
    max_msg_bytes index."""
    return bytes([mtu, *psn_a, *psn_b, timeout, retry, rnr_timer, depth_a, depth_b, window, msg])


def post_send(kind, length, side=0, imm=None, rkey=None, off=0):
    """kind: SEND..WRITE_IMM; length through the `v % (MAX_MSG + 1)` mode."""
    k = kind | (1 << 4) | (0x40 if imm is not None else 0)
    b = op(POST_SEND, side) + bytes([k]) + u16(length)
    if imm is not None:
        b += u32(imm)
    if kind in (WRITE, WRITE_IMM):
        b += bytes([rkey & 3]) + u16(off)
    return b


def post_recv(side=1, length=None):
    if length is None:
        return op(POST_RECV, side) + bytes([2])  # SETTLE_RECV bytes
    return op(POST_RECV, side) + bytes([3]) + u16(length)


def register(rkey, length, side=1):
    # va selector 1: 0x1000
    return op(REGISTER, side) + bytes([(1 << 2) | (rkey & 3)]) + u16(length)


def pump(rounds=8):
    return op(PUMP) + bytes([rounds - 1])


def transmit(side=0, n=0):
    return op(TRANSMIT, side) + bytes([n])


def deliver(side=0, mode=0, count=1):
    """mode 0..3 deliver, 4 drop, 5 duplicate, 6 reorder, 7 back to sender."""
    return op(DELIVER, side) + bytes([((count - 1) << 3) | mode])


def advance(sel=2, v=0):
    """sel 2: to the earliest deadline; 3: just before it; 0 ns, 1 µs, 4 ms."""
    return op(ADVANCE) + bytes([sel]) + u16(v)


def poll(side=0):
    return op(POLL, side) + bytes([0])


SEEDS = {
    # SEND with immediate, three packets at MTU 256, delivered and acked.
    "send_imm": config() + post_recv() + post_send(SEND_IMM, 600, imm=0xdeadbeef)
    + pump() + poll(0) + poll(1),
    # A's PSNs start 3 below the 2^24 wrap; an 8-packet SEND crosses it,
    # both ways.
    "psn_wrap": config(psn_a=(1, 2), psn_b=(1, 0)) + post_recv(1) + post_recv(0)
    + post_send(SEND, 2000) + post_send(SEND, 1500, side=1) + pump() + poll(0) + poll(1),
    # RDMA WRITE with immediate into a registered region at MTU 1024.
    "write_imm": config(mtu=2, depth_a=0x7f, depth_b=0xff) + register(1, 8192)
    + post_recv() + post_send(WRITE_IMM, 5000, imm=7, rkey=1, off=0)
    + post_send(WRITE, 100, rkey=1, off=6000) + pump() + poll(0) + poll(1),
    # The first packet is lost: NAK, go-back-N; the last ACK is lost: timeout.
    "loss_and_timeout": config(timeout=1) + post_recv() + post_recv()
    + post_send(SEND, 700) + post_send(SEND, 300) + transmit(0)
    + deliver(0, mode=4) + deliver(0, mode=0, count=8) + transmit(1)
    + deliver(1, mode=0, count=8) + pump() + advance(2) + pump() + poll(0) + poll(1),
    # No receive posted: RNR NAK, RNR wait, then the receive appears.
    "rnr": config(rnr_timer=0x03) + post_send(SEND, 64) + pump() + advance(3) + advance(2)
    + post_recv() + pump() + advance(2) + pump() + poll(0) + poll(1),
    # A forged ACK and a forged sequence NAK for A's window.
    "synth_responses": config() + post_send(SEND, 900) + transmit(0)
    # flags: AckReq clear; opcode 0x11 ACK; PSN base unacked (1), delta +1;
    # len_sel 0; AETH syndrome 0x1f (ACK), MSN 1.
    + op(SYNTH) + bytes([0x00, 0x11, 0x01, 0x01, 0x00, 0x1f]) + b"\x00\x00\x01"
    # NAK PSN sequence error (0x60) at the unacked PSN.
    + op(SYNTH) + bytes([0x00, 0x11, 0x01, 0x00, 0x00, 0x60]) + b"\x00\x00\x01"
    + transmit(0) + poll(0),
    # A forged SEND ONLY with immediate at B's expected PSN, with AckReq.
    "synth_request": config() + post_recv()
    + op(SYNTH, 1) + bytes([0x20, 0x05, 0x00, 0x00, 0x29]) + u32(0x01020304)
    + transmit(1) + poll(1),
    # One frame mutated (a byte rewritten, checksums fixed), another
    # header-rewritten (PSN shifted), then a lossless exchange.
    "mutated": config() + post_recv() + post_recv() + post_send(SEND, 600)
    + post_send(SEND, 600) + transmit(0)
    + op(MUTATE) + bytes([0x02]) + u16(60) + bytes([0xff])
    + op(MUTATE) + bytes([0x01, 0x07, 0x81])
    + pump() + advance(2) + pump() + poll(0) + poll(1),
    # Symmetric PSN resync to just below the wrap on a quiescent pair.
    "resync": config() + post_recv() + post_send(SEND, 10) + pump() + poll(0) + poll(1)
    + op(RESYNC) + bytes([0x02, 0x01, 0x05, 0x01, 0x09])
    + post_recv() + post_send(SEND, 3000) + pump() + poll(0) + poll(1),
    # Raw bytes, a late replay, and a frame reflected to its sender.
    "raw_and_replay": config() + post_recv() + post_send(SEND, 1)
    + op(RAW) + u16(16) + bytes(range(16)) + transmit(0) + deliver(0, mode=5)
    + transmit(1) + deliver(1, mode=7) + op(REPLAY) + bytes([0]) + pump() + poll(0),
    # Window of one PSN, AckReq never by count, three messages: the packet
    # that fills the window asks for the ACK.
    "narrow_window": config(window=(1 | (7 << 3))) + post_recv() + post_recv() + post_recv()
    + post_send(SEND, 513) + post_send(SEND_IMM, 0, imm=1) + post_send(SEND, 256)
    + pump() + poll(0) + poll(1),
}


def sr(data, small_window=False):
    """The same input with both QPs on the SR profile (config byte 5, bit
    3), optionally with a receive window of 4 PSNs (byte 7, bit 7)."""
    b = bytearray(data)
    b[5] |= 0x08
    if small_window:
        b[7] |= 0x80
    return bytes(b)


# Every seed again under selective retransmission [SR-010], and the lossy
# ones with a window too small for what is in flight.
SR_SEEDS = {f"sr_{name}": sr(data) for name, data in SEEDS.items()}
SR_SEEDS["sr_small_window_loss_and_timeout"] = sr(SEEDS["loss_and_timeout"], small_window=True)
SR_SEEDS["sr_small_window_psn_wrap"] = sr(SEEDS["psn_wrap"], small_window=True)


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {**SEEDS, **SR_SEEDS}
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {OUT}")


if __name__ == "__main__":
    main()
