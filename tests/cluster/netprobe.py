#!/usr/bin/env python3
"""netprobe.py - the TCP ends of the cluster fixture's self-test
(test_cluster_fixture.sh): a server in one host, a client in another.

  netprobe.py serve ADDR PORT READY
      listens on ADDR:PORT (PORT 0: any free port), writes "PORT" to the
      file READY once listening, and serves every connection in a thread:
      reads a header line "UP DOWN", then UP bytes, answers
      "<hostname> <bytes read>\\n" and DOWN bytes, closes.
  netprobe.py send HOST PORT UP DOWN TIMEOUT
      connects (TIMEOUT seconds for the connect and for each read or write),
      sends UP bytes, reads the answer and DOWN bytes; prints
      "<hostname> <bytes the server read> <seconds from connect to the
      last byte>".

Exit codes of send, so that the test can tell a silent partition from a
refusal: 0 done, 3 timed out (connect or transfer: packets vanish),
4 refused or reset (an RST came back), 5 another error (its text on
stderr), 6 a short or malformed answer.
"""
import os
import socket
import sys
import threading
import time

CHUNK = 1 << 16


def read_exact(sock, n):
    got = 0
    while got < n:
        b = sock.recv(min(CHUNK, n - got))
        if not b:
            break
        got += len(b)
    return got


def serve_one(conn):
    try:
        with conn:
            f = conn.makefile("rb")
            head = f.readline().split()
            if len(head) != 2:
                return
            up, down = int(head[0]), int(head[1])
            got = 0
            while got < up:
                b = f.read1(min(CHUNK, up - got))
                if not b:
                    break
                got += len(b)
            conn.sendall(("%s %d\n" % (socket.gethostname(), got)).encode())
            block = b"x" * CHUNK
            left = down
            while left > 0:
                n = min(left, CHUNK)
                conn.sendall(block[:n])
                left -= n
    except OSError:
        pass


def serve(addr, port, ready):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, int(port)))
    ls.listen(64)
    with open(ready + ".tmp", "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(ready + ".tmp", ready)
    while True:
        conn, _ = ls.accept()
        threading.Thread(target=serve_one, args=(conn,), daemon=True).start()


def send(host, port, up, down, timeout):
    up, down, timeout = int(up), int(down), float(timeout)
    t0 = time.monotonic()
    try:
        s = socket.create_connection((host, int(port)), timeout=timeout)
        with s:
            s.sendall(b"%d %d\n" % (up, down))
            block = b"x" * CHUNK
            left = up
            while left > 0:
                n = min(left, CHUNK)
                s.sendall(block[:n])
                left -= n
            f = s.makefile("rb")
            line = f.readline().decode().split()
            got = 0
            while got < down:
                b = f.read1(min(CHUNK, down - got))
                if not b:
                    break
                got += len(b)
    except (socket.timeout, TimeoutError):
        print("timed out after %.2f s" % (time.monotonic() - t0), file=sys.stderr)
        return 3
    except (ConnectionRefusedError, ConnectionResetError) as e:
        print("refused or reset: %s" % e, file=sys.stderr)
        return 4
    except OSError as e:
        print("error: %s" % e, file=sys.stderr)
        return 5
    secs = time.monotonic() - t0
    if len(line) != 2 or int(line[1]) != up or got != down:
        print("short answer: %r, %d of %d bytes" % (line, got, down),
              file=sys.stderr)
        return 6
    print("%s %s %.4f" % (line[0], line[1], secs))
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "serve":
        serve(argv[2], argv[3], argv[4])
        return 0
    if len(argv) == 7 and argv[1] == "send":
        return send(*argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
