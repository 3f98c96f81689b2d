#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
# Node 1's agent in tests/vm/jobs/dmaplaned2.sh, run in the chroot into
# the host's root: it owns node 1's dmaplaned (started with the command
# line it is given) and answers node 0's commands, one line per TCP
# connection, one line back:
#
#   sha256 ARENA OFFSET LENGTH   the SHA-256 of that range of the arena,
#                                read through a fresh attachment (attach
#                                socket, dma-buf, mmap): "ok HEX"
#   zero ARENA OFFSET LENGTH     "ok yes" when the range is all zero
#   kill                         SIGKILL to the daemon: "ok"
#   start                        start it again, wait for its sockets: "ok"
#   stop                         SIGTERM, wait: "ok RC" (its exit status)
#   bye                          "ok", and the agent ends
#
# Usage: dmaplaned2_node1.py ADDR PORT ATTACH-SOCKET API-SOCKET LOG DAEMON ARGS...
import array
import hashlib
import mmap
import os
import signal
import socket
import subprocess
import sys
import time

addr, port, att, api, log = sys.argv[1:6]
cmd = sys.argv[6:]
daemon = None


def start():
    global daemon
    for p in (att, api):
        if os.path.exists(p):
            os.unlink(p)
    daemon = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                              stderr=open(log, "a"))
    for _ in range(240):
        if os.path.exists(att) and os.path.exists(api):
            return "ok"
        if daemon.poll() is not None:
            return "err daemon exited with %d" % daemon.returncode
        time.sleep(0.5)
    return "err no sockets after 120 s"


def attach(name):
    s = socket.socket(socket.AF_UNIX)
    s.connect(att)
    s.sendall(b"ATTACH " + name.encode() + b"\n")
    msg, anc, _, _ = s.recvmsg(100, socket.CMSG_SPACE(4))
    s.close()
    if not msg.startswith(b"OK ") or not anc:
        raise OSError("attach %s: %s" % (name, msg.decode(errors="replace").strip()))
    fd = array.array("i", anc[0][2][:4])[0]
    size = int(msg.split()[1])
    m = mmap.mmap(fd, size)
    os.close(fd)
    return m


def command(line):
    global daemon
    w = line.split()
    if not w:
        return "err empty"
    if w[0] in ("sha256", "zero") and len(w) == 4:
        m = attach(w[1])
        off, n = int(w[2]), int(w[3])
        if off + n > len(m):
            return "err range beyond the arena"
        if w[0] == "sha256":
            h = hashlib.sha256(m[off:off + n]).hexdigest()
        else:
            h = "yes" if m[off:off + n].count(0) == n else "no"
        m.close()
        return "ok " + h
    if w[0] == "kill":
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
        return "ok"
    if w[0] == "start":
        return start()
    if w[0] == "stop":
        daemon.send_signal(signal.SIGTERM)
        try:
            rc = daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            rc = "timeout"
        return "ok %s" % rc
    if w[0] == "bye":
        return "ok"
    return "err unknown command"


print("# node 1 agent: daemon %s" % start(), flush=True)
srv = socket.socket(socket.AF_INET)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((addr, int(port)))
srv.listen(4)
srv.settimeout(4400)
while True:
    try:
        c, _ = srv.accept()
    except socket.timeout:
        print("# node 1 agent: no command for 73 minutes", flush=True)
        break
    c.settimeout(120)
    out = ""
    try:
        line = c.makefile().readline().strip()
        try:
            out = command(line)
        except Exception as e:  # reported, the agent goes on
            out = "err %s" % e
        c.sendall((out + "\n").encode())
    except OSError:
        line = ""
    c.close()
    print("# node 1 agent: %s -> %s" % (line, out), flush=True)
    if line == "bye":
        break
if daemon and daemon.poll() is None:
    daemon.send_signal(signal.SIGTERM)
    daemon.wait()
