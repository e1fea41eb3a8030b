#!/usr/bin/env python3
"""The browser inspector end to end, in headless Chromium driven through the
DevTools protocol: `epic inspect` serves a golden trace and a faulty one;
the page must show the right row counts, expert list and ladder, open a
packet's detail on a click, and load a self-contained `--export` file from
disk. Saves screenshots under target/inspector-test/ and prints the page's
parse times.

    python3 crates/inspector/tests/browser.py [path/to/epic]

Needs: chromium, python3-websocket-client (pip: websocket-client), the page
built by scripts/build-inspector. Exits non-zero on any failure.
"""

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EPIC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "release", "epic")
OUT = os.path.join(ROOT, "target", "inspector-test")
FIXTURES = os.path.join(ROOT, "fixtures")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.read()
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"no answer from {url}")


class Page:
    """One tab of a headless Chromium, over the DevTools protocol."""

    def __init__(self):
        self.port = free_port()
        self.profile = tempfile.mkdtemp(prefix="epic-chromium-")
        self.proc = subprocess.Popen(
            [
                shutil.which("chromium") or "chromium",
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                f"--remote-debugging-port={self.port}",
                f"--user-data-dir={self.profile}",
                "--window-size=1600,1000",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        targets = json.loads(wait_http(f"http://127.0.0.1:{self.port}/json/list"))
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30)
        self.next = 0
        self.send("Page.enable")
        self.send("Runtime.enable")

    def send(self, method, **params):
        self.next += 1
        self.ws.send(json.dumps({"id": self.next, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next:
                if "error" in msg:
                    raise SystemExit(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def eval(self, expr):
        r = self.send("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise SystemExit(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait(self, expr, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            v = self.eval(expr)
            if v:
                return v
            time.sleep(0.1)
        said = self.eval("document.getElementById('status').textContent")
        raise SystemExit(f"timed out waiting for {expr}; the page says {said!r}")

    def goto(self, url):
        self.send("Page.navigate", url=url)
        self.wait("document.body && document.body.dataset.state === 'ready'")

    def screenshot(self, name):
        os.makedirs(OUT, exist_ok=True)
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path = os.path.join(OUT, name)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        self.ws.close()
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def serve(*paths):
    port = free_port()
    proc = subprocess.Popen([EPIC, "inspect", "--port", str(port), *paths], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_http(f"http://127.0.0.1:{port}/trace/list")
    return proc, f"http://127.0.0.1:{port}/"


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")
    print(f"ok: {what}")


def main():
    golden = os.path.join(FIXTURES, "traces", "inc", "mode2-reduce")
    frames = json.loads(subprocess.run([EPIC, "inspect", "--report", "--format", "json", golden], check=True, capture_output=True).stdout)
    page = Page()
    servers = []
    try:
        # A golden trace: every packet in the table, no violation, the
        # ladder of Tree-3-2, a click into a packet.
        proc, url = serve(golden)
        servers.append(proc)
        page.goto(url)
        packets = int(page.eval("document.body.dataset.packets"))
        check(packets == len(frames["packets"]), f"golden: {packets} packets in the page, as in the report")
        check(page.eval("document.body.dataset.violations") == "0", "golden: no violation")
        check(int(page.eval("document.body.dataset.shown")) == packets, "golden: the table holds every packet")
        rows = page.eval("document.querySelectorAll('#table .row').length")
        check(0 < rows < packets, f"golden: the table draws only the visible rows ({rows})")
        check(page.eval("document.querySelectorAll('#invocations tbody tr').length") == 1, "golden: one invocation")
        mode = page.eval("document.querySelector('#invocations tbody td.mode').textContent")
        check(mode == "II (translated)", f"golden: the invocation's mode read from its acknowledgements ({mode!r})")
        ranks = page.eval("document.querySelector('#invocations tbody td.ranks').textContent")
        check(ranks == "4", f"golden: Tree-3-2's four ranks ({ranks!r})")
        checked = int(page.eval("document.querySelector('#invocations tbody td.checked').textContent"))
        want = frames["invocations"][0]["checked_outputs"]
        check(checked == want > 0, f"golden: {checked} switch outputs checked against their inputs, as in the report")
        page.eval("document.querySelector('#filters [name=kind]').value = 'nak'; document.querySelector('#filters').dispatchEvent(new Event('input'))")
        naks = sum(1 for p in frames["packets"] if p["kind"] == "nak")
        page.wait(f"document.body.dataset.drawn === '{naks}'")
        check(True, f"golden: the NAK filter keeps the {naks} NAKs")
        page.eval("document.querySelector('#filters [name=kind]').value = ''; document.querySelector('#filters').dispatchEvent(new Event('input'))")
        page.wait(f"document.body.dataset.drawn === '{packets}'")
        page.eval("document.querySelector('#table .row:nth-child(3)').click()")
        page.wait("!!document.getElementById('detail-layers')")
        layers = json.loads(page.eval("document.getElementById('detail-layers').textContent"))
        check("bth" in layers and layers.get("icrc_ok") is True, "golden: a click opens the packet's decoded layers")
        check(len(page.eval("document.getElementById('detail-hex').textContent").split()) == layers["len"], "golden: the detail shows every byte")
        experts = page.eval("document.querySelectorAll('#expert-list li').length")
        check(experts == sum(1 for e in frames["experts"]), f"golden: {experts} findings in the expert list")
        page.eval("document.querySelector('#tabs [data-tab=ladder]').click()")
        page.wait("document.body.dataset.ladderLanes")
        check(page.eval("document.body.dataset.ladderLanes") == "7", "golden: the ladder has a lane for each rank and switch")
        check(int(page.eval("document.querySelectorAll('#ladder-drawing .arrow').length")) > 0, "golden: the ladder draws its packets")
        page.eval("document.querySelector('#ladder-drawing .arrow').dispatchEvent(new MouseEvent('click'))")
        page.wait("document.body.dataset.selected !== '2'")
        check(True, "golden: an arrow of the ladder opens its packet")
        page.eval("document.querySelector('#tabs [data-tab=psn]').click()")
        page.wait("document.body.dataset.psnPoints")
        check(int(page.eval("document.body.dataset.psnPoints")) > 0, "golden: the PSN graph plots its flow")
        shot = page.screenshot("golden.png")
        print(f"golden: parsed in the page in {page.eval('document.body.dataset.parseMs')} ms; {shot}")

        # A faulty trace: a flipped payload bit, found with its SPEC ID.
        with open(os.path.join(FIXTURES, "traces", "rc-loss-nak.pcap"), "rb") as f:
            bad = bytearray(f.read())
        bad[24 + 16 + 100] ^= 0x04
        tmp = tempfile.mkdtemp(prefix="epic-inspect-")
        faulty = os.path.join(tmp, "bad-icrc.pcap")
        with open(faulty, "wb") as f:
            f.write(bad)
        proc, url = serve(faulty)
        servers.append(proc)
        page.goto(url + "?select=0")
        check(page.eval("document.body.dataset.violations") == "1", "faulty: one violation")
        first = page.eval("document.querySelector('#expert-list li').textContent")
        check("[WIRE-071]" in first and "violation" in first, f"faulty: the expert list leads with it: {first!r}")
        page.wait("!!document.getElementById('detail-title')")
        check("[WIRE-071]" in page.eval("document.getElementById('detail-body').textContent"), "faulty: the packet's detail names WIRE-071")
        page.eval("document.querySelector('#filters [name=errors_only]').checked = true; document.querySelector('#filters').dispatchEvent(new Event('input'))")
        page.wait("document.body.dataset.shown === '1'")
        check(True, "faulty: 'errors only' keeps the one bad frame")
        page.screenshot("faulty.png")

        # The self-contained export, opened from disk without a server.
        export = os.path.join(tmp, "report.html")
        subprocess.run([EPIC, "inspect", "--export", export, golden], check=True, capture_output=True)
        page.goto("file://" + export)
        check(page.eval("document.body.dataset.packets") == str(packets), "export: the file opens from disk with every packet")
        page.screenshot("export.png")
        shutil.rmtree(tmp, ignore_errors=True)
    finally:
        for s in servers:
            s.terminate()
            s.wait()
        page.close()
    print("browser test passed")


if __name__ == "__main__":
    main()
