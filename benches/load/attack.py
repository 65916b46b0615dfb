#!/usr/bin/env python3
"""An honest signed-in client's tools/call under attack, against the same client unattacked.

Usage: attack.py BINARY [seconds]   (run by attack.sh, which builds the release binary)

Starts the server on its defaults in a scratch folder, mints a token for an honest user with
the server's own CLI, and runs the honest client (a session, then `tools/call echo` at 20 calls
a second, each timed) twice: alone, then while an attacker
  - floods anonymous `initialize` requests, each with about 1 MiB of capabilities, from 64
    loopback addresses (127.0.1.0/26), as fast as four threads can send them, and
  - holds 300 connections that send their headers and stall in the body, from 127.0.2.1 and
    127.0.2.2, opening a new one whenever the server closes one.
Prints the honest client's success rate, p50 and p99 for each run, what the attacker's requests
got, and the server's peak resident memory during the attack. Bounded in time and count; every
address is on loopback.

With `documents` as a third argument, the attack is instead on the doors people's data comes in
by (issue 41), while the honest client also uploads a small text file every second:
  - a signed-in attacker uploads hostile PDFs in a loop (a form that draws itself, a
    double-deflated gigabyte, a ten-fold fan-out 14 levels deep), each read by a sandboxed child;
  - another signed-in attacker holds slow upload bodies (a byte every 200 ms);
  - four anonymous callers draw 20,000-point charts with render_chart in a loop.
"""

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BINARY = os.path.realpath(sys.argv[1])
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
SCENARIO = sys.argv[3] if len(sys.argv) > 3 else "flood"
PORT = 18470


def server_env(scratch):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIROBODY_")}
    env.update({"MIROBODY_BACKENDS__DATA_DIR": scratch, "MIROBODY_PUBLIC_BASE_URL": f"http://127.0.0.1:{PORT}"})
    return env


def peak_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def honest_run(token, seconds):
    """A session, then tools/call echo at 20 a second: (calls, ok, latencies in ms)."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {token}",
    }
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "honest", "version": "1"}}}
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    conn.request("POST", "/mcp", json.dumps(init), headers)
    reply = conn.getresponse()
    reply.read()
    headers["mcp-session-id"] = reply.getheader("mcp-session-id")
    headers["mcp-protocol-version"] = "2025-11-25"
    calls, ok, latencies = 0, 0, []
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
        body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                           "params": {"name": "echo", "arguments": {"text": "honest"}}})
        started = time.monotonic()
        calls += 1
        try:
            conn.request("POST", "/mcp", body, headers)
            reply = conn.getresponse()
            data = reply.read()
            if reply.status == 200 and b'"isError":false' in data:
                ok += 1
                latencies.append((time.monotonic() - started) * 1000)
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
        time.sleep(max(0.0, 0.05 - (time.monotonic() - started)))
    conn.close()
    return calls, ok, latencies


def summary(name, run):
    calls, ok, latencies = run
    latencies.sort()
    p50 = statistics.median(latencies) if latencies else float("nan")
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else float("nan")
    print(f"{name}: {ok}/{calls} calls succeeded ({100.0 * ok / max(calls, 1):.1f}%), p50 {p50:.2f} ms, p99 {p99:.2f} ms")


class Attack:
    def __init__(self):
        self.stop = threading.Event()
        self.statuses = {}
        self.lock = threading.Lock()
        self.stalled_opened = 0
        capabilities = '{"experimental":{"x":[' + ",".join(["{}"] * 350_000) + "]}}"
        self.init = ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
                     f'"capabilities":{capabilities},"clientInfo":{{"name":"flood","version":"1"}}}}}}').encode()

    def count(self, status):
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1

    def flood(self, first):
        n = first
        head = (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\nConnection: close\r\n"
                b"Content-Length: " + str(len(self.init)).encode() + b"\r\n\r\n")
        while not self.stop.is_set():
            source = f"127.0.1.{n % 64 + 1}"
            n += 1
            try:
                with socket.create_connection(("127.0.0.1", PORT), timeout=5, source_address=(source, 0)) as s:
                    s.sendall(head + self.init)
                    reply = s.recv(64)
                    self.count(int(reply.split()[1]) if reply.startswith(b"HTTP/1.1") else "closed")
            except OSError:
                self.count("error")

    def stall(self, source, count):
        head = (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Accept: application/json\r\nContent-Length: 100000\r\n\r\n{\"jsonrpc\"")
        held = []
        while not self.stop.is_set():
            alive = []
            for s in held:
                try:
                    s.setblocking(False)
                    if s.recv(1, socket.MSG_PEEK) == b"":
                        s.close()
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    continue
                alive.append(s)
            held = alive
            while len(held) < count and not self.stop.is_set():
                try:
                    s = socket.create_connection(("127.0.0.1", PORT), timeout=5, source_address=(source, 0))
                    s.sendall(head)
                    held.append(s)
                    with self.lock:
                        self.stalled_opened += 1
                except OSError:
                    self.count("stall refused")
                    break
            self.stop.wait(0.2)
        for s in held:
            s.close()


def pdf(objects):
    """A PDF file of these objects (bytes each), with its cross-reference table."""
    out = bytearray(b"%PDF-1.5\n")
    offsets = []
    for i, body in enumerate(objects):
        offsets.append(len(out))
        out += f"{i + 1} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def stream(dictionary, data):
    return b"<< " + dictionary + b" /Length " + str(len(data)).encode() + b" >>\nstream\n" + data + b"\nendstream"


def page(resources):
    return b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << " + resources + b" >> /Contents 4 0 R >>"


HEAD = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"]


def hostile_pdfs():
    """The three hostile PDFs of the attack tests (mirobody-testkit's `hostile`), made here."""
    import zlib
    self_drawing = pdf(HEAD + [page(b"/XObject << /X1 5 0 R >>"), stream(b"", b"/X1 Do"),
                               stream(b"/Type /XObject /Subtype /Form /BBox [0 0 612 792]", b"/X1 Do")])
    inner = zlib.compressobj(9)
    chunk = b" " * (1 << 20)
    deflated = b"".join(inner.compress(chunk) for _ in range(1024)) + inner.flush()
    bomb = pdf(HEAD + [page(b""), stream(b"/Filter [/FlateDecode /FlateDecode]", zlib.compress(deflated, 9))])
    forms = []
    for level in range(14):
        if level + 1 < 14:
            forms.append(stream(f"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /X{level + 1} {6 + level} 0 R >> >>".encode(),
                                f"/X{level + 1} Do\n".encode() * 10))
        else:
            forms.append(stream(b"/Type /XObject /Subtype /Form /BBox [0 0 612 792]", b"0 0 m 1 1 l S"))
    fan_out = pdf(HEAD + [page(b"/XObject << /X0 5 0 R >>"), stream(b"", b"/X0 Do")] + forms)
    return [("self-drawing.pdf", self_drawing), ("bomb.pdf", bomb), ("fan-out.pdf", fan_out)]


def post(path, body, headers, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=timeout)
    try:
        conn.request("POST", path, body, headers)
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


class DocumentAttack:
    def __init__(self, tokens):
        self.tokens = tokens
        self.stop = threading.Event()
        self.statuses = {}
        self.lock = threading.Lock()
        self.pdfs = hostile_pdfs()
        points = [60 + (i * 7919) % 80 for i in range(20_000)]
        self.chart = {"xAxis": {"type": "category"}, "yAxis": {"type": "value"},
                      "series": [{"name": "Heart rate", "type": "line", "data": points}]}

    def count(self, what, status):
        with self.lock:
            key = f"{what} {status}"
            self.statuses[key] = self.statuses.get(key, 0) + 1

    def hostile_uploads(self):
        headers = {"authorization": f"Bearer {self.tokens['mallory']}", "content-type": "application/pdf"}
        n = 0
        while not self.stop.is_set():
            name, body = self.pdfs[n % len(self.pdfs)]
            n += 1
            try:
                status, _ = post(f"/files?filename={name}", body, headers)
                self.count("hostile upload", status)
                if status == 429:
                    self.stop.wait(1)
            except (OSError, http.client.HTTPException):
                self.count("hostile upload", "error")

    def slow_upload(self):
        token = self.tokens["slowpoke"]
        while not self.stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", PORT), timeout=60) as s:
                    s.sendall((f"POST /files?filename=slow.txt HTTP/1.1\r\nHost: localhost\r\n"
                               f"Authorization: Bearer {token}\r\nContent-Type: text/plain\r\n"
                               f"Content-Length: 100000\r\n\r\n").encode())
                    s.settimeout(0.2)
                    while not self.stop.is_set():
                        try:
                            reply = s.recv(64)
                            status = int(reply.split()[1]) if reply.startswith(b"HTTP/1.1") else "closed"
                            self.count("slow upload", status)
                            # Refused: come back when told to, as a client that keeps trying would.
                            if status == 429:
                                self.stop.wait(1)
                            break
                        except socket.timeout:
                            s.sendall(b"x")
            except OSError:
                self.count("slow upload", "error")

    def charts(self):
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "drawer", "version": "1"}}}
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
        conn.request("POST", "/mcp", json.dumps(init), headers)
        reply = conn.getresponse()
        reply.read()
        headers = dict(headers, **{"mcp-session-id": reply.getheader("mcp-session-id") or "", "mcp-protocol-version": "2025-11-25"})
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "render_chart", "arguments": {"option": self.chart}}})
        while not self.stop.is_set():
            try:
                conn.request("POST", "/mcp", body, headers)
                reply = conn.getresponse()
                data = reply.read()
                self.count("chart", "drawn" if b'"isError":false' in data else reply.status)
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
                self.count("chart", "error")


def honest_uploads(token, stop, results):
    headers = {"authorization": f"Bearer {token}", "content-type": "text/plain"}
    n = 0
    while not stop.is_set():
        n += 1
        started = time.monotonic()
        try:
            status, _ = post(f"/files?filename=honest-{n}.txt", f"Glucose 5.{n % 10} mmol/L".encode(), headers)
        except (OSError, http.client.HTTPException):
            status = "error"
        results.append((status, (time.monotonic() - started) * 1000))
        stop.wait(1)


def documents(env, scratch, server, token):
    tokens = {user: subprocess.run([BINARY, "token", "--user", user, "--ttl", "3600"], env=env, cwd=scratch,
                                   capture_output=True, text=True, check=True).stdout.strip()
              for user in ("mallory", "slowpoke")}
    summary("honest client, no attack", honest_run(token, SECONDS))
    attack = DocumentAttack(tokens)
    threads = [threading.Thread(target=attack.hostile_uploads) for _ in range(2)]
    threads += [threading.Thread(target=attack.slow_upload) for _ in range(4)]
    threads += [threading.Thread(target=attack.charts) for _ in range(4)]
    reset_peak(server.pid)
    for t in threads:
        t.start()
    time.sleep(2)
    uploads, stop_uploads = [], threading.Event()
    uploader = threading.Thread(target=honest_uploads, args=(token, stop_uploads, uploads))
    uploader.start()
    run = honest_run(token, SECONDS)
    stop_uploads.set()
    uploader.join()
    attack.stop.set()
    for t in threads:
        t.join()
    summary("honest client, under attack", run)
    stored = [ms for status, ms in uploads if status == 201]
    print(f"honest uploads under attack: {len(stored)}/{len(uploads)} stored, "
          f"slowest {max(stored) if stored else float('nan'):.1f} ms")
    print(f"attacker: {dict(sorted(attack.statuses.items()))}")
    print(f"server peak resident memory during the attack: {peak_kib(server.pid)} KiB")


def main():
    scratch = tempfile.mkdtemp()
    env = server_env(scratch)
    token = subprocess.run([BINARY, "token", "--user", "honest", "--ttl", "3600"], env=env, cwd=scratch,
                           capture_output=True, text=True, check=True).stdout.strip()
    server = subprocess.Popen([BINARY, "--bind", f"127.0.0.1:{PORT}", "serve"], env=env, cwd=scratch,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        if SCENARIO == "documents":
            documents(env, scratch, server, token)
            assert server.poll() is None, "the server died"
            return
        summary("honest client, no attack", honest_run(token, SECONDS))
        attack = Attack()
        threads = [threading.Thread(target=attack.flood, args=(i * 16,)) for i in range(4)]
        threads += [threading.Thread(target=attack.stall, args=(f"127.0.2.{i}", 150)) for i in (1, 2)]
        reset_peak(server.pid)
        for t in threads:
            t.start()
        time.sleep(2)
        run = honest_run(token, SECONDS)
        attack.stop.set()
        for t in threads:
            t.join()
        summary("honest client, under attack", run)
        print(f"attacker: initialize replies {dict(sorted(attack.statuses.items(), key=str))}; "
              f"{attack.stalled_opened} stalled connections opened")
        print(f"server peak resident memory during the attack: {peak_kib(server.pid)} KiB")
        assert server.poll() is None, "the server died"
    finally:
        server.terminate()
        server.wait()


main()
