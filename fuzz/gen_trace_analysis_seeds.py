#!/usr/bin/env python3
"""Seeds of the trace_analysis fuzz target: the frames of golden traces as
its records ([capture u8][time step u16][flags u8][length u16][frame]),
each link's capture as one of three, flag bit 0 set (checksums recomputed,
which leaves a valid frame as it is). One seed per golden trace, its first
frames, so a seed stays small."""
import glob, os, struct, sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
out = os.path.join(root, "fuzz", "seeds", "trace_analysis")
os.makedirs(out, exist_ok=True)
for d in sorted(glob.glob(os.path.join(root, "fixtures", "traces", "inc", "*"))):
    frames = []
    for c, f in enumerate(sorted(glob.glob(os.path.join(d, "*.pcap")))[:3]):
        b = open(f, "rb").read()
        # Nanosecond pcaps (magic a1b23c4d) count the fraction in ns.
        scale = 1 if b[:4] == b"\x4d\x3c\xb2\xa1" else 1000
        off = 24
        while off + 16 <= len(b):
            sec, frac, incl, _ = struct.unpack("<IIII", b[off:off + 16])
            off += 16
            frames.append((sec * 10**9 + frac * scale, c, b[off:off + incl]))
            off += incl
    frames.sort(key=lambda x: x[0])
    rec, last = b"", 0
    for ts, c, fr in frames[:40]:
        step = min(max(ts - last, 0), 0xFFFF)
        last = ts
        rec += struct.pack(">BHBH", c, step, 1, len(fr)) + fr
    with open(os.path.join(out, os.path.basename(d)), "wb") as f:
        f.write(rec)
print(f"{len(os.listdir(out))} seeds in {out}", file=sys.stderr)
