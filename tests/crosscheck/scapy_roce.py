#!/usr/bin/env python3
"""Cross-check `epic decode --format json` against frames built by scapy.

Scapy (scapy.contrib.roce) is an independent RoCEv2 implementation: it builds
the Ethernet/IPv4/UDP/BTH/AETH/CNP layers and computes the ICRC in
`BTH.post_build` (masked copy of IP/UDP/BTH behind 8 bytes of 0xFF, zlib
CRC-32, written least-significant byte first). Extension headers scapy has no
class for (RETH, ImmDt, DETH, IETH, AtomicETH, AtomicAckETH) are appended here
as raw big-endian bytes before the payload; scapy still computes the ICRC over
them.

Steps:
  1. With a fixed seed, choose the fields of N randomized RoCEv2/IPv4 frames
     (plus two anchor frames rebuilt from the worked ICRC examples of
     ROCEV2.md section 3, whose bytes must come out identical).
  2. Build them with scapy; check scapy's ICRC against an independent
     implementation of ROCEV2.md section 3 written below.
  3. Write `scapy_roce.pcap` and `scapy_roce.expected.jsonl` (the expected
     decoder output, derived from the chosen values, not from re-dissection).
  4. Run `epic decode --format json` and compare every field of every frame.
  5. Mutations of every frame (`scapy_roce_mutations.pcap`): one flipped bit
     in an ICRC-covered byte or in the ICRC itself must give icrc_ok false;
     TTL/TOS (with and without fixing the IPv4 checksum), the UDP checksum and
     FECN/BECN are masked by the ICRC, so icrc_ok must stay true.

Prints `scapy cross-check: N passed, M failed` (one item per frame and per
mutated frame) and exits non-zero on any failure or when fewer than 200
frames were checked.

Spec requirements exercised: [WIRE-001] [WIRE-010] [WIRE-020] [WIRE-022]
[WIRE-025] [WIRE-030] [WIRE-040] [WIRE-042] [WIRE-043] [WIRE-044] [WIRE-045]
[WIRE-046] [WIRE-047] [WIRE-048] [WIRE-049] [WIRE-051] [WIRE-063] [WIRE-070]
[WIRE-071] [WIRE-100] [WIRE-101]
"""

import argparse
import copy
import json
import os
import random
import struct
import subprocess
import sys
import zlib

try:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Dot1Q, Ether
    from scapy.packet import Raw
    from scapy.utils import PcapWriter
    from scapy.contrib.roce import AETH, BTH, CNPPadding
except ImportError as e:  # pragma: no cover
    sys.stderr.write("scapy is required (pip install scapy): %s\n" % e)
    sys.exit(2)

ROCE_PORT = 4791
EPIC_IMM_TAG = 0x45504943  # ASCII "EPIC" [WIRE-101]
MIN_FRAMES = 200

# ---------------------------------------------------------------------------
# Opcode table, written from ROCEV2.md section 2 (not taken from epic-proto).
# Layout letters, in wire order: D=DETH R=RETH A=AtomicETH K=AETH
# X=AtomicAckETH I=ImmDt V=IETH C=CNP reserved block; P=payload allowed.
# ---------------------------------------------------------------------------
_RC_OPS = {
    0x00: ("SEND_FIRST", "P"),
    0x01: ("SEND_MIDDLE", "P"),
    0x02: ("SEND_LAST", "P"),
    0x03: ("SEND_LAST_WITH_IMMEDIATE", "IP"),
    0x04: ("SEND_ONLY", "P"),
    0x05: ("SEND_ONLY_WITH_IMMEDIATE", "IP"),
    0x06: ("RDMA_WRITE_FIRST", "RP"),
    0x07: ("RDMA_WRITE_MIDDLE", "P"),
    0x08: ("RDMA_WRITE_LAST", "P"),
    0x09: ("RDMA_WRITE_LAST_WITH_IMMEDIATE", "IP"),
    0x0A: ("RDMA_WRITE_ONLY", "RP"),
    0x0B: ("RDMA_WRITE_ONLY_WITH_IMMEDIATE", "RIP"),
    0x0C: ("RDMA_READ_REQUEST", "R"),
    0x0D: ("RDMA_READ_RESPONSE_FIRST", "KP"),
    0x0E: ("RDMA_READ_RESPONSE_MIDDLE", "P"),
    0x0F: ("RDMA_READ_RESPONSE_LAST", "KP"),
    0x10: ("RDMA_READ_RESPONSE_ONLY", "KP"),
    0x11: ("ACKNOWLEDGE", "K"),
    0x12: ("ATOMIC_ACKNOWLEDGE", "KX"),
    0x13: ("COMPARE_SWAP", "A"),
    0x14: ("FETCH_ADD", "A"),
    0x16: ("SEND_LAST_WITH_INVALIDATE", "VP"),
    0x17: ("SEND_ONLY_WITH_INVALIDATE", "VP"),
}
OPCODES = {}
for _op, (_name, _lay) in _RC_OPS.items():
    OPCODES[_op] = ("RC_" + _name, _lay)
    if _op <= 0x0B:  # UC: the SEND/WRITE operations
        OPCODES[0x20 + _op] = ("UC_" + _name, _lay)
OPCODES[0x64] = ("UD_SEND_ONLY", "DP")
OPCODES[0x65] = ("UD_SEND_ONLY_WITH_IMMEDIATE", "DIP")
OPCODES[0x81] = ("CNP", "C")

# The opcodes the cross-check must cover get a higher weight.
_FOCUS = [0x00, 0x01, 0x02, 0x04, 0x05, 0x03, 0x06, 0x0A, 0x0B, 0x0C, 0x0D,
          0x10, 0x11, 0x24, 0x64, 0x81]
OPCODE_WEIGHTS = [(op, 4 if op in _FOCUS else 1) for op in sorted(OPCODES)]

AETH_SYNDROMES = (
    [0x1F] * 6                       # ACK, unlimited credit (what rxe sends)
    + [0x00, 0x05, 0x10]             # ACK with credit codes
    + [0x20, 0x21, 0x2E, 0x3F]       # RNR NAK with timer codes
    + [0x60, 0x60, 0x61, 0x62, 0x63]  # NAKs
    + [0x64, 0x7F]                   # NAK with an unassigned code
    + [0x40, 0x5A, 0x9F, 0xE0]       # reserved kind 10 / bit 7 set
)


def aeth_kind(syndrome):
    if syndrome & 0x80:
        return "reserved"
    return {0: "ack", 1: "rnr_nak", 2: "reserved", 3: "nak"}[(syndrome >> 5) & 3]


# ---------------------------------------------------------------------------
# Independent ICRC (ROCEV2.md section 3), used to check scapy's value.
# ---------------------------------------------------------------------------
def icrc_reference(datagram_without_icrc):
    """CRC as zlib.crc32 returns it, over 8 x 0xFF + the masked datagram."""
    b = bytearray(datagram_without_icrc)
    b[1] = 0xFF                 # TOS
    b[8] = 0xFF                 # TTL
    b[10:12] = b"\xff\xff"      # IPv4 header checksum
    b[26:28] = b"\xff\xff"      # UDP checksum (20 + 6)
    b[32] = 0xFF                # BTH byte 4: FECN/BECN/resv6 (20 + 8 + 4)
    return zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xFFFFFFFF


def inet_checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def udp_checksum(ip_src, ip_dst, udp_bytes):
    """RFC 768 checksum of a UDP datagram whose checksum field is zero."""
    pseudo = (bytes(int(x) for x in ip_src.split("."))
              + bytes(int(x) for x in ip_dst.split("."))
              + struct.pack("!BBH", 0, 17, len(udp_bytes)))
    c = inet_checksum(pseudo + udp_bytes)
    return 0xFFFF if c == 0 else c


def mac_str(b):
    return ":".join("%02x" % x for x in b)


# ---------------------------------------------------------------------------
# Frame specification: every value the frame carries, chosen up front.
# ---------------------------------------------------------------------------
def rand_ip(rng):
    return "%d.%d.%d.%d" % (rng.choice([10, 172, 192, 198, rng.randint(1, 223)]),
                            rng.randint(0, 255), rng.randint(0, 255),
                            rng.randint(1, 254))


def rand_payload_len(rng):
    r = rng.random()
    if r < 0.10:
        return 0
    if r < 0.35:
        return rng.randint(1, 64)
    if r < 0.55:
        return rng.choice([256, 512, 1024, 2048, 4096, 4095, 4093, 1023, 1025])
    return rng.randint(0, 4096)


def epic_header_spec(rng):
    """A valid version-1 EPIC Collective Header (layout in
    crates/epic-proto/src/wire/epic_header.rs, written here independently)."""
    coll = rng.choice([1, 2, 3, 4, 5, 6])
    if coll == 4:  # Barrier: no op, no type, no data
        op, dt, pkts, elems, per_pkt = 0, 0, 0, 0, rng.choice([0, 1024])
    else:
        op = rng.choice([1, 2, 3]) if coll in (1, 2, 5) else 0
        dt = rng.choice([1, 2, 3, 4])
        size = 4 if dt in (1, 2) else 2
        per_pkt = rng.choice([256, 512, 1024, 2048, 4096])
        elems = rng.randint(1, 1 << 20)
        pkts = -(-(elems * size) // per_pkt)
    h = {
        "version": 1, "header_len": 36, "collective": coll, "reduce_op": op,
        "data_type": dt, "flags": rng.choice([0, 0, 1]),
        "root_rank": rng.randint(0, 0xFFFF) if coll in (2, 3) else 0,
        "group_id": rng.getrandbits(32), "invocation": rng.getrandbits(32),
        "first_psn": rng.getrandbits(24), "packet_count": pkts,
        "element_count": elems, "payload_bytes_per_packet": per_pkt,
        "reserved": (0, 0, 0),  # flags bits 7..5, byte 16, bytes 34..35
        "extension": b"",
    }
    if rng.random() < 0.3:
        # Reserved bits set: sent as zero but ignored on receipt. [WIRE-104]
        h["reserved"] = (rng.getrandbits(3) << 5, rng.getrandbits(8),
                         rng.getrandbits(16))
    if rng.random() < 0.5:
        # Lock flags (acquire, release, denied): named on a Barrier only.
        # [TMX-010]
        h["flags"] |= rng.choice([0x04, 0x08, 0x14, 0x0C, 0x10])
    if rng.random() < 0.3:
        # A longer header from a later minor revision: a version-1 receiver
        # ignores the appended fields. [WIRE-102]
        h["header_len"] = rng.choice([40, 44, 64])
        h["extension"] = bytes(rng.getrandbits(8)
                               for _ in range(h["header_len"] - 36))
    return h


def epic_header_bytes(h):
    flags_resv, byte16, resv34 = h["reserved"]
    return struct.pack(
        "!BBBBBBHIIB3sIQHH",
        h["version"], h["header_len"], h["collective"], h["reduce_op"],
        h["data_type"], h["flags"] | flags_resv, h["root_rank"], h["group_id"],
        h["invocation"], byte16, h["first_psn"].to_bytes(3, "big"),
        h["packet_count"], h["element_count"], h["payload_bytes_per_packet"],
        resv34) + h["extension"]


def gen_spec(rng, epic=False):
    if epic:
        op = 0x05
    else:
        ops, weights = zip(*OPCODE_WEIGHTS)
        op = rng.choices(ops, weights)[0]
    name, lay = OPCODES[op]
    s = {
        "opcode": op, "name": name, "layout": lay,
        "eth_dst": bytes(rng.getrandbits(8) for _ in range(6)),
        "eth_src": bytes([rng.getrandbits(8) & 0xFC]
                         + [rng.getrandbits(8) for _ in range(5)]),
        "vlan": None,
        "ip_src": rand_ip(rng), "ip_dst": rand_ip(rng),
        "tos": rng.getrandbits(8), "ttl": rng.randint(1, 255),
        "ip_id": rng.getrandbits(16), "df": rng.random() < 0.85,
        "sport": rng.choice([0xC000 | rng.getrandbits(14), rng.getrandbits(16)]),
        "udp_csum_mode": rng.choice(["zero", "zero", "fixed", "computed"]),
        "se": rng.random() < 0.3, "m": rng.random() < 0.3,
        "pkey": rng.choice([0xFFFF, 0x7FFF, 0x8001, rng.getrandbits(16)]),
        "fecn": rng.random() < 0.2, "becn": rng.random() < 0.2,
        "dqpn": rng.randint(1, 0xFFFFFF), "ackreq": rng.random() < 0.4,
        "psn": rng.getrandbits(24),
        "ext": {},
        "epic": None,
        # Reserved BTH bits: not in the decoder output, ignored on receipt.
        # resv6 (byte 4) is masked by the ICRC, resv7 (byte 8) is covered.
        "resv6": rng.getrandbits(6) if rng.random() < 0.1 else 0,
        "resv7": rng.getrandbits(7) if rng.random() < 0.1 else 0,
    }
    if rng.random() < 0.25:
        s["vlan"] = {"pcp": rng.randint(0, 7), "dei": rng.random() < 0.2,
                     "vid": rng.randint(0, 4095)}
    s["udp_csum"] = rng.randint(1, 0xFFFF) if s["udp_csum_mode"] == "fixed" else 0
    ext = s["ext"]
    if "D" in lay:
        ext["deth"] = {"qkey": rng.choice([0x80010000, rng.getrandbits(32)]),
                       "src_qp": rng.randint(1, 0xFFFFFF)}
    if "R" in lay:
        ext["reth"] = {"va": rng.getrandbits(64), "rkey": rng.getrandbits(32),
                       "dma_len": rng.getrandbits(32) if rng.random() < 0.3
                       else rng.randint(0, 1 << 20)}
    if "A" in lay:
        ext["atomic_eth"] = {"va": rng.getrandbits(64) & ~7,
                             "rkey": rng.getrandbits(32),
                             "swap_add": rng.getrandbits(64),
                             "compare": rng.getrandbits(64)}
    if "K" in lay:
        ext["aeth"] = {"syndrome": rng.choice(AETH_SYNDROMES),
                       "msn": rng.getrandbits(24)}
    if "X" in lay:
        ext["atomic_ack_eth"] = {"orig_remote_data": rng.getrandbits(64)}
    if "I" in lay:
        imm = rng.getrandbits(32)
        if imm == EPIC_IMM_TAG:  # an accidental EPIC control message
            imm ^= 1
        ext["immdt"] = EPIC_IMM_TAG if epic else imm
    if "V" in lay:
        ext["ieth"] = {"rkey": rng.getrandbits(32)}
    if op == 0x81:
        # Like scapy's cnp(): BECN set, PSN 0, P_Key 0xFFFF; sometimes random.
        if rng.random() < 0.7:
            s.update(becn=True, fecn=False, psn=0, pkey=0xFFFF, se=False,
                     m=False, ackreq=False)
    # Payload and pad.
    if epic:
        h = epic_header_spec(rng)
        s["epic"] = h
        # The control message's own PSN lies outside its data range
        # [WIRE-121]: it takes the PSN just before the data.
        s["psn"] = (h["first_psn"] - 1) % (1 << 24)
        data = epic_header_bytes(h)
        if rng.random() < 0.3:  # trailing bytes after the header are allowed
            data += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 20)))
        s["payload"] = data
        s["pad"] = (-len(data)) % 4
        s["pad_bytes"] = b"\0" * s["pad"]
    elif "P" in lay:
        n = rand_payload_len(rng)
        s["payload"] = bytes(rng.getrandbits(8) for _ in range(n))
        if rng.random() < 0.15:
            # An arbitrary pad count; the pad bytes are just more bytes of the
            # payload handed to scapy (random, not zero: nobody checks them).
            pad = rng.choice([p for p in range(4) if p != (-n) % 4])
            s["pad"] = pad
            s["pad_bytes"] = bytes(rng.getrandbits(8) for _ in range(pad))
        else:
            s["pad"] = (-n) % 4
            s["pad_bytes"] = b"\0" * s["pad"]
    else:
        s["payload"] = b""
        s["pad"] = 0
        s["pad_bytes"] = b""
    return s


def anchor_specs():
    """The two worked examples of ROCEV2.md section 3, with their bytes."""
    v1 = {
        "opcode": 0x24, "name": "UC_SEND_ONLY", "layout": "P",
        "eth_dst": bytes.fromhex("020000000002"),
        "eth_src": bytes.fromhex("020000000001"), "vlan": None,
        "ip_src": "192.168.0.7", "ip_dst": "192.168.0.7", "tos": 0x01,
        "ttl": 0x40, "ip_id": 0x0478, "df": True, "sport": 0xC000,
        "udp_csum_mode": "fixed", "udp_csum": 0xACA2, "se": False, "m": True,
        "pkey": 0xFFFF, "fecn": False, "becn": False, "dqpn": 0xD3,
        "ackreq": False, "psn": 0xCF1710, "ext": {}, "epic": None,
        "payload": bytes.fromhex("4630818be28935d90e9a95505401be885e50"),
        "pad": 2, "pad_bytes": b"\0\0",
        "expect_datagram": bytes.fromhex(
            "45010040047840004011b4d5c0a80007c0a80007c00012b7002caca2"
            "2460ffff000000d300cf17104630818be28935d90e9a95505401be885e50"
            "000078f353f3"),
    }
    v2 = {
        "opcode": 0x81, "name": "CNP", "layout": "C",
        "eth_dst": bytes.fromhex("020000000012"),
        "eth_src": bytes.fromhex("020000000011"), "vlan": None,
        "ip_src": "10.0.17.1", "ip_dst": "10.0.18.1", "tos": 0xC2,
        "ttl": 0x40, "ip_id": 0x718C, "df": True, "sport": 0,
        "udp_csum_mode": "zero", "udp_csum": 0, "se": False, "m": False,
        "pkey": 0xFFFF, "fecn": False, "becn": True, "dqpn": 0x118,
        "ackreq": False, "psn": 0, "ext": {}, "epic": None,
        "payload": b"", "pad": 0, "pad_bytes": b"",
        "expect_datagram": bytes.fromhex(
            "45c2003c718c4000401191610a0011010a001201000012b700280000"
            "8100ffff4000011800000000" + "00" * 16 + "82fd002a"),
    }
    return [v1, v2]


# ---------------------------------------------------------------------------
# Building with scapy
# ---------------------------------------------------------------------------
def ext_bytes(s):
    """Raw bytes of the extension headers scapy has no class for, and whether
    the AETH goes through scapy's AETH class."""
    ext = s["ext"]
    before_aeth = b""
    after_aeth = b""
    if "deth" in ext:
        d = ext["deth"]
        before_aeth += struct.pack("!II", d["qkey"], d["src_qp"] & 0xFFFFFF)
    if "reth" in ext:
        r = ext["reth"]
        before_aeth += struct.pack("!QII", r["va"], r["rkey"], r["dma_len"])
    if "atomic_eth" in ext:
        a = ext["atomic_eth"]
        before_aeth += struct.pack("!QIQQ", a["va"], a["rkey"], a["swap_add"],
                                   a["compare"])
    if "atomic_ack_eth" in ext:
        after_aeth += struct.pack("!Q", ext["atomic_ack_eth"]["orig_remote_data"])
    if "immdt" in ext:
        after_aeth += struct.pack("!I", ext["immdt"])
    if "ieth" in ext:
        after_aeth += struct.pack("!I", ext["ieth"]["rkey"])
    return before_aeth, after_aeth


def build(s):
    """Returns the frame bytes, as scapy builds them."""
    l2 = Ether(dst=mac_str(s["eth_dst"]), src=mac_str(s["eth_src"]))
    if s["vlan"] is not None:
        v = s["vlan"]
        l2 = l2 / Dot1Q(prio=v["pcp"], dei=int(v["dei"]), vlan=v["vid"])
    ip = IP(src=s["ip_src"], dst=s["ip_dst"], tos=s["tos"], ttl=s["ttl"],
            id=s["ip_id"], flags="DF" if s["df"] else 0)
    udp = UDP(sport=s["sport"], dport=ROCE_PORT,
              chksum=None if s["udp_csum_mode"] == "computed" else s["udp_csum"])
    bth = BTH(opcode=s["opcode"], solicited=int(s["se"]), migreq=int(s["m"]),
              padcount=s["pad"], version=0, pkey=s["pkey"], fecn=int(s["fecn"]),
              becn=int(s["becn"]), resv6=s.get("resv6", 0), dqpn=s["dqpn"],
              ackreq=int(s["ackreq"]), resv7=s.get("resv7", 0), psn=s["psn"])
    before, after = ext_bytes(s)
    body = s["payload"] + s["pad_bytes"]
    if s["opcode"] == 0x81:
        top = bth / CNPPadding()
    elif "aeth" in s["ext"]:
        a = s["ext"]["aeth"]
        top = bth
        if before:
            top = top / Raw(before)
        top = top / AETH(syndrome=a["syndrome"], msn=a["msn"])
        if after + body:
            top = top / Raw(after + body)
    else:
        top = bth
        if before + after + body:
            top = top / Raw(before + after + body)
    pkt = l2 / ip / udp / top
    return bytes(pkt)


def expected_record(s, frame_no, ts, frame):
    ext_len = sum({"D": 8, "R": 16, "A": 28, "K": 4, "X": 8, "I": 4, "V": 4,
                   "C": 16, "P": 0}[c] for c in s["layout"])
    roce_len = 12 + ext_len + len(s["payload"]) + s["pad"] + 4
    rec = {
        "frame": frame_no,
        "ts": ts,
        "len": len(frame),
        "roce": True,
        "eth": {
            "dst": mac_str(s["eth_dst"]),
            "src": mac_str(s["eth_src"]),
            "vlan": (None if s["vlan"] is None else
                     {"pcp": s["vlan"]["pcp"], "dei": s["vlan"]["dei"],
                      "vid": s["vlan"]["vid"]}),
            "ethertype": 0x0800,
        },
        "ipv4": {
            "src": s["ip_src"], "dst": s["ip_dst"],
            "dscp": s["tos"] >> 2, "ecn": s["tos"] & 3,
            "ttl": s["ttl"], "ident": s["ip_id"], "dont_frag": s["df"],
            "protocol": 17, "checksum_ok": True,
        },
        "udp": {
            "src_port": s["sport"], "dst_port": ROCE_PORT,
            "checksum": s["udp_csum"], "length": 8 + roce_len,
        },
        "bth": {
            "opcode": s["opcode"], "opcode_name": s["name"],
            "se": s["se"], "m": s["m"], "pad_count": s["pad"], "tver": 0,
            "pkey": s["pkey"], "fecn": s["fecn"], "becn": s["becn"],
            "dest_qp": s["dqpn"], "ack_req": s["ackreq"], "psn": s["psn"],
        },
    }
    ext = s["ext"]
    for k in ("reth", "ieth", "deth", "atomic_eth", "atomic_ack_eth"):
        if k in ext:
            rec[k] = dict(ext[k])
    if "aeth" in ext:
        syn = ext["aeth"]["syndrome"]
        rec["aeth"] = {"syndrome": syn, "kind": aeth_kind(syn),
                       "value": syn & 0x1F, "msn": ext["aeth"]["msn"]}
    if "immdt" in ext:
        rec["immdt"] = ext["immdt"]
    if s["opcode"] == 0x81:
        rec["cnp"] = True
    if s["epic"] is not None:
        rec["epic"] = expected_epic(s["epic"])
    rec["payload_len"] = len(s["payload"])
    rec["icrc"] = None  # filled in by the caller from scapy's bytes
    rec["icrc_ok"] = True
    rec["error"] = None
    return rec


_COLLECTIVES = {1: "all_reduce", 2: "reduce", 3: "broadcast", 4: "barrier",
                5: "reduce_scatter", 6: "all_gather"}
_OPS = {0: "none", 1: "sum", 2: "min", 3: "max"}
_DTYPES = {0: "none", 1: "int32", 2: "fp32", 3: "fp16", 4: "bf16"}


def expected_lock(h):
    """A Barrier's lock request: acquire wins over release; denied only
    qualifies an acquire. [TMX-010]"""
    if h["collective"] != 4:
        return None
    if h["flags"] & 0x04:
        return "acquire-denied" if h["flags"] & 0x10 else "acquire"
    if h["flags"] & 0x08:
        return "release"
    return None


def expected_epic(h):
    """The decoder's `epic` object. The binary prints the names and the
    collective code; it has no header_len or raw flags key, and a lock key
    only for a Barrier that asks for one."""
    lock = expected_lock(h)
    out = {
        "version": h["version"],
        "group_id": h["group_id"],
        "invocation": h["invocation"],
        "collective": _COLLECTIVES[h["collective"]],
        "collective_code": h["collective"],
        "reduce_op": _OPS[h["reduce_op"]],
        "data_type": _DTYPES[h["data_type"]],
        "reproducible": bool(h["flags"] & 1),
        "quantized": bool(h["flags"] & 2),
        "root_rank": h["root_rank"],
        "first_psn": h["first_psn"],
        "packet_count": h["packet_count"],
        "element_count": h["element_count"],
        "payload_bytes_per_packet": h["payload_bytes_per_packet"],
    }
    if lock is not None:
        out["lock"] = lock
    return out


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------
def diff(exp, act, path, out):
    """Appends (path, expected, actual) for every difference. A key the
    expectation lacks must be absent or null in the output (layers absent);
    unexpected non-null keys are reported."""
    if isinstance(exp, dict):
        if not isinstance(act, dict):
            out.append((path, exp, act))
            return
        for k, v in exp.items():
            if k not in act:
                out.append((path + "." + k, v, "<missing>"))
            else:
                diff(v, act[k], path + "." + k, out)
        for k, v in act.items():
            if k not in exp and v is not None:
                out.append((path + "." + k, "<absent>", v))
        return
    if isinstance(exp, bool) or exp is None or isinstance(act, bool):
        if type(exp) is not type(act) or exp != act:
            out.append((path, exp, act))
        return
    if isinstance(exp, float):
        if not isinstance(act, (int, float)) or abs(exp - act) > 2e-6:
            out.append((path, exp, act))
        return
    if exp != act or type(exp) is not type(act):
        out.append((path, exp, act))


def run_decoder(epic, pcap):
    p = subprocess.run([epic, "decode", pcap, "--format", "json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=False)
    if p.returncode != 0:
        raise RuntimeError("%s decode %s exited %d: %s" % (
            epic, pcap, p.returncode, p.stderr.decode(errors="replace")[:2000]))
    out = {}
    for line in p.stdout.decode().splitlines():
        line = line.strip()
        if not line:
            continue
        obj = json.loads(line)
        out[obj.get("frame")] = obj
    return out


def write_pcap(path, frames):
    w = PcapWriter(path, linktype=1, sync=True)
    w.write_header(None)  # write_packet() alone does not emit it
    for ts_sec, ts_usec, b in frames:
        w.write_packet(b, sec=ts_sec, usec=ts_usec, caplen=len(b), wirelen=len(b))
    w.close()


# ---------------------------------------------------------------------------
# Mutations
# ---------------------------------------------------------------------------
def covered_offsets(frame, ip_at):
    """Offsets of ICRC-covered, unmasked bytes: IPv4 header to end of pad."""
    total = struct.unpack("!H", frame[ip_at + 2:ip_at + 4])[0]
    end = ip_at + total - 4
    masked = {ip_at + 1, ip_at + 8, ip_at + 10, ip_at + 11, ip_at + 26,
              ip_at + 27, ip_at + 32}
    return [o for o in range(ip_at, end) if o not in masked], end


def structural(off, ip_at, bit):
    """Whether flipping this bit breaks the frame before the ICRC can be
    judged (the decoder then reports icrc_ok null with an error): IPv4
    version/IHL, total length, MF/fragment offset, protocol, UDP destination
    port, UDP length (must equal the IPv4 payload length)."""
    rel = off - ip_at
    if rel in (0, 2, 3, 9, 22, 23, 24, 25):
        return True
    if rel == 6 and bit != 6 and bit != 7:  # MF (bit 5) or fragment offset
        return True
    if rel == 7:
        return True
    return False


def refresh_ipv4_checksum(b, ip_at):
    b[ip_at + 10:ip_at + 12] = b"\0\0"
    c = inet_checksum(bytes(b[ip_at:ip_at + 20]))
    b[ip_at + 10:ip_at + 12] = struct.pack("!H", c)


def mutations(rng, frame, ip_at, rec):
    """Yields (kind, bytes, check) where check(obj) returns a list of
    problems. `rec` is the expected record of the unmutated frame."""
    cov, icrc_at = covered_offsets(frame, ip_at)

    off = rng.choice(cov)
    bit = rng.randrange(8)
    b = bytearray(frame)
    b[off] ^= 1 << bit
    if structural(off, ip_at, bit):
        def chk(o, off=off, bit=bit):
            if o.get("icrc_ok") is True:
                return ["icrc_ok true after flipping bit %d of byte %d" % (bit, off)]
            if o.get("icrc_ok") is None and o.get("error") is None:
                return ["icrc_ok null but no error (bit %d of byte %d)" % (bit, off)]
            return []
    else:
        def chk(o, off=off, bit=bit):
            if o.get("icrc_ok") is not False:
                return ["icrc_ok %r (want false) after flipping bit %d of byte %d"
                        % (o.get("icrc_ok"), bit, off)]
            return []
    yield ("bitflip@%d.%d%s" % (off, bit, " (framing)" if structural(off, ip_at, bit)
                                else ""), bytes(b), chk)

    # A flipped bit in the ICRC itself.
    off = icrc_at + rng.randrange(4)
    bit = rng.randrange(8)
    b = bytearray(frame)
    b[off] ^= 1 << bit
    carried = "%08x" % struct.unpack("<I", bytes(b[icrc_at:icrc_at + 4]))[0]

    def chk_icrc(o, carried=carried):
        p = []
        if o.get("icrc_ok") is not False:
            p.append("icrc_ok %r (want false) with a corrupted ICRC" % o.get("icrc_ok"))
        if o.get("icrc") != carried:
            p.append("icrc %r, want the carried %r" % (o.get("icrc"), carried))
        return p
    yield ("icrcflip@%d.%d" % (off, bit), bytes(b), chk_icrc)

    def masked_check(want):
        """A masked field changed: icrc_ok stays true and the record is the
        original one with only the changed fields different."""
        exp = copy.deepcopy(rec)
        for (layer, key), v in want.items():
            exp[layer][key] = v

        def chk(o):
            exp["frame"] = o.get("frame")
            d = []
            diff(exp, o, "", d)
            return ["%s: expected %r, got %r" % x for x in d]
        return chk

    old_ttl = frame[ip_at + 8]
    old_tos = frame[ip_at + 1]
    new_ttl = rng.choice([t for t in range(256) if t != old_ttl])
    new_tos = rng.choice([t for t in range(256) if t != old_tos])
    for fix in (True, False):
        b = bytearray(frame)
        b[ip_at + 8] = new_ttl
        if fix:
            refresh_ipv4_checksum(b, ip_at)
        yield ("ttl=%d%s" % (new_ttl, "" if fix else ",stale-csum"), bytes(b),
               masked_check({("ipv4", "ttl"): new_ttl,
                             ("ipv4", "checksum_ok"): fix}))
        b = bytearray(frame)
        b[ip_at + 1] = new_tos
        if fix:
            refresh_ipv4_checksum(b, ip_at)
        yield ("tos=0x%02x%s" % (new_tos, "" if fix else ",stale-csum"), bytes(b),
               masked_check({("ipv4", "dscp"): new_tos >> 2,
                             ("ipv4", "ecn"): new_tos & 3,
                             ("ipv4", "checksum_ok"): fix}))

    old_csum = struct.unpack("!H", frame[ip_at + 26:ip_at + 28])[0]
    new_csum = rng.choice([0, 0xFFFF, rng.getrandbits(16)])
    if new_csum == old_csum:
        new_csum ^= 0x5A5A
    b = bytearray(frame)
    b[ip_at + 26:ip_at + 28] = struct.pack("!H", new_csum)
    yield ("udp_csum=0x%04x" % new_csum, bytes(b),
           masked_check({("udp", "checksum"): new_csum,
                         ("ipv4", "checksum_ok"): True}))

    b = bytearray(frame)
    old = b[ip_at + 32]
    new = old ^ rng.choice([0x80, 0x40, 0xC0])
    if rng.random() < 0.3:
        new ^= rng.getrandbits(6)  # resv6 is masked too
    b[ip_at + 32] = new
    yield ("fecn/becn 0x%02x->0x%02x" % (old, new), bytes(b),
           masked_check({("bth", "fecn"): bool(new & 0x80),
                         ("bth", "becn"): bool(new & 0x40)}))


# ---------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epic", default="target/debug/epic", help="epic binary")
    ap.add_argument("--out", default="target/crosscheck", help="output directory")
    ap.add_argument("--count", type=int, default=250, help="random frames")
    ap.add_argument("--seed", type=int, default=0xE91C, help="RNG seed")
    ap.add_argument("--show", type=int, default=5, help="mismatches to print")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    pcap = os.path.join(args.out, "scapy_roce.pcap")
    sidecar = os.path.join(args.out, "scapy_roce.expected.jsonl")
    mpcap = os.path.join(args.out, "scapy_roce_mutations.pcap")

    specs = anchor_specs()
    n_epic = max(4, args.count // 25)
    for i in range(args.count):
        specs.append(gen_spec(rng, epic=(i % (args.count // n_epic or 1) == 7)))

    passed = 0
    failed = 0
    shown = 0

    def report(title, problems, frame):
        nonlocal shown
        if shown < args.show:
            shown += 1
            print("MISMATCH %s" % title)
            for p in problems[:20]:
                print("    %s" % (p,))
            print("    frame (%d bytes): %s%s" % (
                len(frame), frame[:192].hex(), "..." if len(frame) > 192 else ""))

    frames = []
    expected = []
    t0 = 1_700_000_000
    for i, s in enumerate(specs):
        frame_no = i + 1
        b = build(s)
        ip_at = 18 if s["vlan"] is not None else 14
        total = struct.unpack("!H", b[ip_at + 2:ip_at + 4])[0]
        dgram = b[ip_at:ip_at + total]
        carried = struct.unpack("<I", dgram[-4:])[0]
        ref = icrc_reference(dgram[:-4])
        if carried != ref:
            failed += 1
            report("frame %d: scapy ICRC %08x != reference %08x" % (
                frame_no, carried, ref), [], b)
        if "expect_datagram" in s and dgram != s["expect_datagram"]:
            failed += 1
            report("frame %d: anchor bytes differ from ROCEV2.md" % frame_no,
                   [s["expect_datagram"].hex()], b)
        if s["udp_csum_mode"] == "computed":
            udp = bytearray(dgram[20:])
            scapy_csum = struct.unpack("!H", bytes(udp[6:8]))[0]
            udp[6:8] = b"\0\0"
            s["udp_csum"] = udp_checksum(s["ip_src"], s["ip_dst"], bytes(udp))
            if scapy_csum != s["udp_csum"]:
                failed += 1
                report("frame %d: scapy UDP checksum %04x != %04x" % (
                    frame_no, scapy_csum, s["udp_csum"]), [], b)
        if inet_checksum(dgram[:20]) != 0:
            failed += 1
            report("frame %d: scapy IPv4 checksum wrong" % frame_no, [], b)
        # Short frames get Ethernet padding to 60 bytes, as a NIC sends them;
        # the decoder must take the datagram length from IPv4. [WIRE-022]
        if len(b) < 60:
            b = b + b"\0" * (60 - len(b))
        usec = (i * 1237) % 1_000_000
        sec = t0 + (i * 1237) // 1_000_000
        frames.append((sec, usec, b))
        rec = expected_record(s, frame_no, sec + usec / 1e6, b)
        rec["icrc"] = "%08x" % carried
        expected.append(rec)

    write_pcap(pcap, frames)
    with open(sidecar, "w") as f:
        for rec in expected:
            f.write(json.dumps(rec, sort_keys=False) + "\n")

    try:
        got = run_decoder(args.epic, pcap)
    except (OSError, RuntimeError, ValueError) as e:
        print("decoder failed: %s" % e)
        print("scapy cross-check: %d passed, %d failed" % (passed, failed + len(expected)))
        return 1

    frames_checked = 0
    for rec, (_, _, b) in zip(expected, frames):
        act = got.get(rec["frame"])
        frames_checked += 1
        if act is None:
            failed += 1
            report("frame %d: missing from decoder output" % rec["frame"], [], b)
            continue
        d = []
        diff(rec, act, "", d)
        if d:
            failed += 1
            report("frame %d (%s)" % (rec["frame"], rec["bth"]["opcode_name"]),
                   ["%s: expected %r, got %r" % x for x in d], b)
        else:
            passed += 1
    extra = set(got) - {r["frame"] for r in expected}
    if extra:
        failed += 1
        print("decoder printed unexpected frame numbers: %s" % sorted(extra)[:10])

    # Mutations.
    mframes = []
    mchecks = []
    for rec, (sec, usec, b), s in zip(expected, frames, specs):
        ip_at = 18 if s["vlan"] is not None else 14
        for kind, mb, chk in mutations(rng, b, ip_at, rec):
            mframes.append((sec, usec, mb))
            mchecks.append(("frame %d %s" % (rec["frame"], kind), mb, chk))
    write_pcap(mpcap, mframes)
    try:
        mgot = run_decoder(args.epic, mpcap)
    except (OSError, RuntimeError, ValueError) as e:
        print("decoder failed on mutations: %s" % e)
        failed += len(mchecks)
        mgot = None
    mut_passed = 0
    mut_failed = 0
    if mgot is not None:
        for n, (title, mb, chk) in enumerate(mchecks, start=1):
            act = mgot.get(n)
            problems = ["missing from decoder output"] if act is None else chk(act)
            if problems:
                mut_failed += 1
                report("mutation %d (%s)" % (n, title), problems, mb)
            else:
                mut_passed += 1
    passed += mut_passed
    failed += mut_failed

    flips = [t for t, _, _ in mchecks if " bitflip@" in t]
    print("frames: %d checked (2 anchors from ROCEV2.md, %d random, %d EPIC "
          "control, %d VLAN-tagged)" % (
              frames_checked, args.count,
              sum(1 for s in specs if s["epic"] is not None),
              sum(1 for s in specs if s["vlan"] is not None)))
    print("mutations: %d checked, %d failed (%d covered-bit flips, of which "
          "%d in framing fields; %d ICRC flips; %d masked-field rewrites)" % (
              len(mchecks), mut_failed, len(flips),
              sum(1 for t in flips if _is_structural_title(t)),
              sum(1 for t, _, _ in mchecks if " icrcflip@" in t),
              sum(1 for t, _, _ in mchecks
                  if " bitflip@" not in t and " icrcflip@" not in t)))
    print("pcaps and expected values in %s" % args.out)
    too_few = frames_checked < MIN_FRAMES
    if too_few:
        print("too few frames checked (%d < %d)" % (frames_checked, MIN_FRAMES))
    print("scapy cross-check: %d passed, %d failed" % (passed, failed))
    return 1 if failed or too_few else 0


def _is_structural_title(title):
    return title.endswith(" (framing)")


if __name__ == "__main__":
    sys.exit(main())
