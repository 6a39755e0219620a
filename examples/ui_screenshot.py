"""ui_screenshot.py - screenshots of the MLflow UI with headless chromium,
driven over its DevTools protocol (stdlib only: a minimal websocket
client), because the chart view draws its image cards only when they are
opened and their step slider moved, which chromium's --screenshot flag
cannot do.

usage: ui_screenshot.py URL OUT.png [--wait S] [--open-card KEY --step N]
  URL          a page of the UI (e.g. an experiment's chart view)
  --wait S     seconds to let the page load before anything (20)
  --open-card  open the chart card titled KEY full-screen and set its step
               slider to N, then capture that instead of the page
Exit 1 with the reason when chromium or the page does not answer."""
import argparse
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import time
import urllib.request

OPEN_CARD = """(async (key, step) => {
  const title = [...document.querySelectorAll("*")].find(
      e => e.childElementCount === 0 && e.textContent.trim() === key);
  if (!title) return "no card titled " + key;
  let card = title;
  for (let i = 0; i < 8 && card && card.querySelectorAll("button").length < 2; i++)
    card = card.parentElement;
  card.querySelectorAll("button")[0].click();   /* full screen */
  await new Promise(r => setTimeout(r, 3000));
  const inputs = [...document.querySelectorAll("[role=dialog] input")];
  const box = inputs[inputs.length - 1];
  if (!box) return "no step box in the card";
  Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")
      .set.call(box, String(step));
  box.dispatchEvent(new Event("input", {bubbles: true}));
  box.dispatchEvent(new Event("change", {bubbles: true}));
  box.blur();
  return "ok";
})"""


class DevTools:
    """One websocket to a page target: send a command, wait for its answer."""

    def __init__(self, port, path):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                        f"Sec-WebSocket-Key: {key}\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(4096)
            if not chunk:
                raise OSError("DevTools closed the websocket handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise OSError("DevTools refused the websocket: %r" % head[:80])
        self.buf = head.split(b"\r\n\r\n", 1)[1]
        self.next_id = 0

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise OSError("DevTools closed the websocket")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _message(self):
        data = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            data += self._read(n)
            if b0 & 0x80:
                return json.loads(data)

    def call(self, method, **params):
        self.next_id += 1
        body = json.dumps({"id": self.next_id, "method": method,
                           "params": params}).encode()
        mask = os.urandom(4)
        n = len(body)
        head = bytes([0x81])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(body)))
        while True:
            m = self._message()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise OSError(f"{method}: {m['error']}")
                return m.get("result", {})


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("out")
    ap.add_argument("--wait", type=float, default=20)
    ap.add_argument("--open-card")
    ap.add_argument("--step", type=int, default=0)
    ap.add_argument("--size", default="1600,3400")
    a = ap.parse_args()
    port = free_port()
    chrome = subprocess.Popen(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
         "--hide-scrollbars", f"--remote-debugging-port={port}",
         f"--window-size={a.size}", a.url],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        page = None
        for _ in range(150):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json") as r:
                    page = next((t for t in json.load(r) if t.get("type") == "page"), None)
                if page:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        if not page:
            sys.exit("ui_screenshot: chromium's DevTools did not answer")
        dt = DevTools(port, page["webSocketDebuggerUrl"].split(f":{port}", 1)[1])
        time.sleep(a.wait)
        if a.open_card:
            r = dt.call("Runtime.evaluate", awaitPromise=True, returnByValue=True,
                        expression=f"{OPEN_CARD}({json.dumps(a.open_card)}, {a.step})")
            said = r.get("result", {}).get("value")
            if said != "ok":
                sys.exit(f"ui_screenshot: {said}")
            time.sleep(8)
        shot = dt.call("Page.captureScreenshot", format="png")
        with open(a.out, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
    finally:
        chrome.kill()
        chrome.wait()


if __name__ == "__main__":
    main()
