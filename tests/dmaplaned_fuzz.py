#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A fuzz pass over dmaplaned's REST API (tests/vm/jobs/dmaplaned.sh).

Usage: dmaplaned_fuzz.py SOCKET N SEED

Sends N requests over the UNIX socket SOCKET: well-formed ones with
random methods, paths and JSON bodies, mutated ones (bytes flipped,
truncated, headers oversized, bodies longer or shorter than their
Content-Length, chunked), and random bytes.  Arenas it manages to create
are named fz*, at most 1 MiB, and are deleted at the end.  Exit status 0
when the daemon answered every complete request with a status other than
500 and is still alive; prints a histogram of the statuses.
"""

import json
import random
import socket
import sys

PATHS = ["/v1/node", "/v1/arenas", "/v1/arenas/fz1", "/v1/arenas/fz2/stats",
         "/v1/peers", "/v1/events", "/", "/v1", "/v1/", "/v1/arenas/",
         "/v1/arenas/..", "/v1/arenas/fz1/x", "/v1/arenas/%2e%2e",
         "/v1/arenas/" + "a" * 300, "/v2/node", "/v1/arenas/fz1/stats/x",
         "/v1/moves", "/v1/moves/1", "/v1/moves/2", "/v1/moves/x",
         "/v1/moves/99999999999999999999999", "/v1/moves/-1",
         "/v1/nodes", "/v1/nodes/other", "/v1/nodes/other/arenas",
         "/v1/peers/fzp", "/v1/mesh/info", "/v1/mesh/grants",
         "/v1/mesh/grants/1", "/v1/arenas/fz1/xxh128?offset=0&length=4096",
         "/v1/arenas/fz1/xxh128?offset=-1&length=x"]
METHODS = ["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS", "G\x01T"]


def rnd_value(r):
    return r.choice([0, -1, 1, 4096, 65536, 1 << 20, 1 << 62, 2 ** 70, 1.5,
                     "1M", "64K", "0", "-4096", "1X", "", "x" * 1000, None,
                     True, [], {}, "0640", "0777", "9999", "\u00e9"])


def rnd_body(r):
    o = {}
    if r.random() < 0.9:
        o["name"] = r.choice(["fz%d" % r.randrange(4), "", ".x", "a/b", "x" * 70,
                              "fz\u00e9", 5, None])
    if r.random() < 0.9:
        o["size"] = r.choice([4096, 8192, 1 << 20, "4K", "1M"]) \
            if r.random() < 0.5 else rnd_value(r)
    for k in ("owner", "group", "mode", "huge_only", "zz"):
        if r.random() < 0.3:
            o[k] = rnd_value(r)
    s = json.dumps(o)
    if r.random() < 0.2:
        i = r.randrange(len(s) + 1)
        s = s[:i] + r.choice(["", "{", "}", "\x00", "\"", ",", "\\u0000"]) + s[i:]
    return s.encode("utf-8", "surrogatepass")


def rnd_move(r):
    def end():
        e = {}
        if r.random() < 0.9:
            e["arena"] = r.choice(["fz0", "fz1", "nosuch", "", 7])
        if r.random() < 0.6:
            e["offset"] = r.choice([0, 4096, "4K", -1, 2 ** 64 - 4096, "1G"]) \
                if r.random() < 0.7 else rnd_value(r)
        if r.random() < 0.1:
            e["node"] = r.choice(["other", "", None])
        return e if r.random() < 0.95 else rnd_value(r)
    o = {}
    for k in ("src", "dst"):
        if r.random() < 0.9:
            o[k] = end()
    if r.random() < 0.9:
        o["length"] = r.choice([4096, 8192, "8K", 0, -1, 2 ** 63]) \
            if r.random() < 0.7 else rnd_value(r)
    if r.random() < 0.3:
        o["chunk"] = r.choice([4096, 1, "64M", "1G"]) if r.random() < 0.7 else rnd_value(r)
    return json.dumps(o).encode("utf-8", "surrogatepass")


def request(r):
    method = r.choice(METHODS) if r.random() < 0.3 else r.choice(["GET", "POST", "DELETE"])
    path = r.choice(PATHS)
    body = rnd_body(r) if method == "POST" or r.random() < 0.1 else b""
    if path == "/v1/moves" and method == "POST" and r.random() < 0.8:
        body = rnd_move(r)
    headers = ["Host: x", "Connection: close"]
    mode = r.random()
    if mode < 0.1:
        headers.append("Transfer-Encoding: chunked")
        body = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    elif mode < 0.15:
        headers.append("Content-Length: %d" % (len(body) + r.randrange(1, 50)))
    elif mode < 0.2:
        headers.append("Content-Length: " + r.choice(["-1", "99999999999999999999", "x", ""]))
    else:
        headers.append("Content-Length: %d" % len(body))
    if r.random() < 0.05:
        headers.append("X-Big: " + "y" * r.choice([100, 10000, 100000]))
    if r.random() < 0.05:
        headers.append("Authorization: Bearer " + "z" * r.randrange(100))
    raw = ("%s %s HTTP/1.1\r\n" % (method, path) + "\r\n".join(headers)
           + "\r\n\r\n").encode("latin-1", "replace") + body
    m = r.random()
    if m < 0.1:
        raw = bytes(r.randrange(256) for _ in range(r.randrange(1, 400)))
    elif m < 0.2:
        raw = bytearray(raw)
        for _ in range(r.randrange(1, 5)):
            raw[r.randrange(len(raw))] = r.randrange(256)
        raw = bytes(raw)
    elif m < 0.25:
        raw = raw[:r.randrange(len(raw))]
    return path, raw


def exchange(sock_path, raw, timeout=3.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock_path)
    try:
        s.sendall(raw)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while len(data) < 1 << 20:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionResetError, BrokenPipeError):
        data = b""
    finally:
        s.close()
    return data


def status_of(data):
    if not data.startswith(b"HTTP/1."):
        return None
    try:
        return int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None


def simple(sock_path, method, path):
    data = exchange(sock_path, b"%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    % (method.encode(), path.encode()))
    st = status_of(data)
    body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
    return st, body


def cleanup(sock_path):
    """Cancel the fuzzed moves still running, then delete the fz* arenas
    (a move holds its arenas: 409 until it has ended)."""
    import time
    for _ in range(60):
        st, body = simple(sock_path, "GET", "/v1/moves")
        try:
            moves = json.loads(body) if st == 200 else []
        except ValueError:
            moves = []
        live = [m["id"] for m in moves if m.get("state") in ("queued", "running")]
        for i in live:
            simple(sock_path, "DELETE", "/v1/moves/%d" % i)
        left = 0
        for name in ("fz0", "fz1", "fz2", "fz3"):
            st, _ = simple(sock_path, "DELETE", "/v1/arenas/" + name)
            left += st == 409
        if not live and not left:
            return
        time.sleep(0.5)


def main():
    sock_path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    r = random.Random(seed)
    hist = {}
    bad = []
    for i in range(n):
        path, raw = request(r)
        if path == "/v1/events" and raw.startswith(b"GET"):
            continue  # a stream: never ends by itself
        st = status_of(exchange(sock_path, raw))
        hist[st] = hist.get(st, 0) + 1
        if st is not None and st >= 500 and st not in (503, 507):
            bad.append((i, st, raw[:200]))
    cleanup(sock_path)
    alive = status_of(exchange(sock_path, b"GET /v1/node HTTP/1.1\r\nHost: x\r\n"
                               b"Connection: close\r\n\r\n"))
    print("statuses:", ", ".join("%s x%d" % (k, v) for k, v in
                                 sorted(hist.items(), key=lambda kv: str(kv[0]))))
    for b in bad[:10]:
        print("server error:", b)
    print("alive after fuzzing:", alive)
    sys.exit(0 if alive == 200 and not bad else 1)


if __name__ == "__main__":
    main()
