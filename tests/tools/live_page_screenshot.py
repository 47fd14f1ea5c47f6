#!/usr/bin/env python3
"""Screenshots a ddprund live page after it has been open a while, for docs/images/.

Starts headless Chromium (Debian's chromium) on URL, waits SECONDS of real time while the page
polls and plots, then asks Chromium for a PNG over its DevTools protocol (a WebSocket on
loopback, spoken here with the standard library) and writes it to OUT. A test's
--screenshot is taken seconds after load; this one shows minutes of a job.
Usage: live_page_screenshot.py URL SECONDS OUT
"""
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def devtools_port(profile, deadline):
    path = os.path.join(profile, "DevToolsActivePort")
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path) as file:
                first = file.readline().strip()
            if first:
                return int(first)
        time.sleep(0.1)
    raise SystemExit("live_page_screenshot: Chromium did not open its DevTools port")


def send_text(sock, text):
    """One masked text frame, as a WebSocket client must send (RFC 6455, 5.3)."""
    payload = text.encode()
    header = bytearray([0x81])
    if len(payload) < 126:
        header.append(0x80 | len(payload))
    else:
        header.append(0x80 | 126)
        header += len(payload).to_bytes(2, "big")
    mask = os.urandom(4)
    sock.sendall(bytes(header) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


def read_exactly(sock, count):
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise SystemExit("live_page_screenshot: DevTools closed the connection")
        data += chunk
    return data


def read_message(sock):
    """The payload of the next data frame (Chromium sends each message in one frame)."""
    while True:
        first, second = read_exactly(sock, 2)
        length = second & 0x7F
        if length == 126:
            length = int.from_bytes(read_exactly(sock, 2), "big")
        elif length == 127:
            length = int.from_bytes(read_exactly(sock, 8), "big")
        payload = read_exactly(sock, length)
        if first & 0x0F in (1, 2):
            return payload


def capture(websocket_url):
    host_port, path = websocket_url[len("ws://"):].split("/", 1)
    host, port = host_port.split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                  "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += read_exactly(sock, 1)
    if b" 101 " not in answer.split(b"\r\n")[0]:
        raise SystemExit(f"live_page_screenshot: no WebSocket: {answer[:200]!r}")
    send_text(sock, json.dumps({"id": 1, "method": "Page.captureScreenshot",
                                "params": {"format": "png"}}))
    while True:
        message = json.loads(read_message(sock))
        if message.get("id") == 1:
            return base64.b64decode(message["result"]["data"])


def main(url, seconds, out):
    with tempfile.TemporaryDirectory() as profile:
        chromium = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--remote-debugging-port=0", f"--user-data-dir={profile}",
             "--window-size=1100,1240", url],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            port = devtools_port(profile, time.monotonic() + 30)
            time.sleep(float(seconds))
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                pages = [t for t in json.load(r) if t.get("type") == "page"]
            png = capture(pages[0]["webSocketDebuggerUrl"])
        finally:
            # Chromium's own helpers (zygote, renderers) are in its session's process group.
            os.killpg(chromium.pid, signal.SIGTERM)
            chromium.wait(timeout=30)
    with open(out, "wb") as file:
        file.write(png)
    print(f"live_page_screenshot: {out}, {len(png)} bytes")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__.strip().splitlines()[-1])
    main(*sys.argv[1:])
