#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make bench2: build build/bench/bench2.txt from the two nodes' logs.

Usage: summary2.py RESULTS-0.LOG [RESULTS-1.LOG]

Node 0 ran the clients and bracketed each test's output with
DMAPLANE-PEER-BEGIN <label> / DMAPLANE-PEER-END <label> rc=<n>.  Prints the
setup notes, dp-bench's tables verbatim, one line per peer measurement and
the summary of ratios.  A measurement that is missing or failed shows as
"n/a (reason)", never as a dropped line.
"""
import re
import sys

MIB = 1048576 / 1e6     # perftest and UCX print MiB/s as "MB/sec"


def sections(path):
    secs, cur, notes = {}, None, []
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError as e:
        return {}, ["# %s: %s" % (path, e)]
    for line in lines:
        m = re.match(r"DMAPLANE-PEER-BEGIN (\S+)", line)
        if m:
            cur = m.group(1)
            secs[cur] = {"lines": [], "rc": None, "label": cur}
            continue
        m = re.match(r"DMAPLANE-PEER-END (\S+) rc=(\d+)", line)
        if m and cur:
            secs[cur]["rc"] = int(m.group(2))
            cur = None
            continue
        if cur:
            secs[cur]["lines"].append(line)
        elif line.startswith("# node") or line.startswith("DMAPLANE-CASE") \
                or line.startswith("DMAPLANE-GUEST-DONE"):
            notes.append(line)
    return secs, notes


SERVERS = {}    # label -> (exit status, last line of its log), from node 1


def servers(path):
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return
    cur = None
    for line in lines:
        m = re.match(r"# (\S+): server exit (\d+)", line)
        if m:
            cur = m.group(1)
            SERVERS[cur] = [int(m.group(2)), ""]
        elif line.startswith("#") or line.startswith("DMAPLANE-"):
            cur = None
        elif cur and line.strip() and not set(line.strip()) <= set("-+|="):
            ln = re.sub(r"^(\[[^]]*\]\s*)+", "", line.strip())
            first_err = re.search(r"Fatal|ERROR|error|Invalid|Unable", SERVERS[cur][1])
            if not first_err:
                SERVERS[cur][1] = ln


class NA(Exception):
    pass


def reason(sec):
    if sec is None:
        return "not run: node 0 stopped before it"
    body = [ln.strip() for ln in sec["lines"]
            if ln.strip() and not ln.startswith("# client")
            and not set(ln.strip()) <= set("-+|")]
    # the first error line names the cause better than the last line
    # (often a backtrace's or an abort's)
    errs = [ln for ln in body if re.search(r"Fatal|ERROR|\[error\]|error:|Unable|Couldn", ln)]
    last = errs[0] if errs else body[-1] if body else "no output"
    last = re.sub(r"^(\[[^]]*\]\s*)+", "", last)
    rc = sec["rc"]
    why = ("rc=%s: " % rc if rc else "") + last[:90]
    srv = SERVERS.get(sec.get("label"))
    if rc and srv and srv[0] not in (0, 143) and srv[1]:
        why += "; server exit %d: %s" % (srv[0], srv[1][:80])
    return why


def rows(sec, first):
    """Whitespace-split lines whose first field is @first."""
    return [ln.split() for ln in sec["lines"] if ln.split()[:1] == [first]]


def value(secs, label, fn):
    sec = secs.get(label)
    if sec is None or sec["rc"] is None:
        return None, reason(sec)
    try:
        v = fn(sec)
    except NA as e:
        return None, str(e) if str(e) else reason(sec)
    except (IndexError, ValueError):
        return None, reason(sec)
    if v is None:
        return None, reason(sec)
    return v, None


def dp_col(size, col):
    """dp-bench rlat/rbw table: @size row, column 1 (dmaplane) or 2 (tcp)."""
    def fn(sec):
        for ln in sec["lines"]:
            if ln.startswith(size + " ") or ln.startswith(size + "\t"):
                f = ln[len(size):].split()
                if f[col - 1] == "n/a":
                    why = [x for x in sec["lines"]
                           if x.startswith("# %s: n/a" % ("dmaplane", "tcp")[col - 1])]
                    raise NA(why[0].split("n/a (", 1)[1].rstrip(")") if why else "n/a")
                return float(f[col - 1])
        return None
    return fn


def dp_rate(name):
    def fn(sec):
        r = rows(sec, name)
        if not r or r[0][1] == "n/a":
            raise NA()
        return float(r[0][1])
    return fn


def perftest_lat(size):
    # #bytes #iterations t_min t_max t_typical t_avg ...
    return lambda sec: float(rows(sec, str(size))[0][5])


def perftest_bw(size):
    # #bytes #iterations BW_peak BW_average MsgRate
    return lambda sec: float(rows(sec, str(size))[0][3]) * MIB


def ucx(idx, scale=1.0):
    # Final: iters lat50 lat_avg lat_overall bw_avg bw_overall mr_avg mr_overall
    return lambda sec: float(rows(sec, "Final:")[0][idx]) * scale


def fi(col):
    # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec (one size;
    # the size column is abbreviated: 8, 1m)
    def fn(sec):
        for ln in sec["lines"]:
            f = ln.split()
            if len(f) == 8 and f[0][0].isdigit() and f[2].startswith("="):
                return float(f[col])
        return None
    return fn


def iperf3(sec):
    for ln in sec["lines"]:
        m = re.search(r"([0-9.]+) Mbits/sec.*receiver", ln)
        if m:
            return float(m.group(1)) / 8
    return None


UNITS = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "sec": 1e6,
         "bytes/sec": 1e-6, "KB/sec": 1e-3, "MB/sec": 1.0, "GB/sec": 1e3}


def qperf(key):
    def fn(sec):
        for ln in sec["lines"]:
            m = re.match(r"\s*%s\s*=\s*([0-9.]+)\s*(\S+)" % key, ln)
            if m:
                return float(m.group(1)) * UNITS[m.group(2)]
        return None
    return fn


# (label in the log, what, parser, unit)
PEERS = [
    ("ib_send_lat-8", "ib_send_lat 8 B (raw verbs RC send)", perftest_lat(8), "us"),
    ("ib_send_lat-8-ev", "ib_send_lat -e 8 B (CQ events, no busy poll)", perftest_lat(8), "us"),
    ("ib_send_lat-1M", "ib_send_lat 1 MiB", perftest_lat(1048576), "us"),
    ("ib_write_bw-1M", "ib_write_bw 1 MiB (RDMA write)", perftest_bw(1048576), "MB/s"),
    ("ib_read_bw-1M", "ib_read_bw 1 MiB (RDMA read)", perftest_bw(1048576), "MB/s"),
    ("ucx-ud_verbs-tag_lat-8", "ucx_perftest tag_lat 8 B (rc_verbs, ud wireup)", ucx(3), "us"),
    ("ucx-ud_verbs-tag_bw-1M", "ucx_perftest tag_bw 1 MiB (rc_verbs, ud wireup)", ucx(5, MIB), "MB/s"),
    ("ucx-tcp-tag_lat-8", "ucx_perftest tag_lat 8 B (rc_verbs, tcp wireup)", ucx(3), "us"),
    ("ucx-tcp-tag_bw-1M", "ucx_perftest tag_bw 1 MiB (rc_verbs, tcp wireup)", ucx(5, MIB), "MB/s"),
    ("fi_pingpong-verbs+ofi_rxm-rdm-8", "fi_pingpong 8 B (verbs;ofi_rxm rdm)", fi(6), "us"),
    ("fi_pingpong-verbs+ofi_rxm-rdm-1048576", "fi_pingpong 1 MiB (verbs;ofi_rxm rdm)", fi(5), "MB/s"),
    ("fi_pingpong-verbs-msg-8", "fi_pingpong 8 B (verbs msg)", fi(6), "us"),
    ("fi_pingpong-verbs-msg-1048576", "fi_pingpong 1 MiB (verbs msg)", fi(5), "MB/s"),
    ("fi_pingpong-tcp-rdm-8", "fi_pingpong 8 B (tcp rdm)", fi(6), "us"),
    ("fi_pingpong-tcp-rdm-1048576", "fi_pingpong 1 MiB (tcp rdm)", fi(5), "MB/s"),
    ("iperf3", "iperf3 TCP stream", iperf3, "MB/s"),
    ("qperf-tcp_lat", "qperf tcp_lat 8 B", qperf("latency"), "us"),
    ("qperf-tcp_bw", "qperf tcp_bw 1 MiB", qperf("bw"), "MB/s"),
    ("dp-rlat", "dp-bench rlat 8 B, tcp column", dp_col("8 B", 2), "us"),
    ("dp-rbw", "dp-bench rbw 1 MiB, tcp column", dp_col("1 MiB", 2), "MB/s"),
]

DMAPLANE = {
    "lat8": ("dp-rlat", dp_col("8 B", 1)),
    "lat1M": ("dp-rlat", dp_col("1 MiB", 1)),
    "bw1M": ("dp-rbw", dp_col("1 MiB", 1)),
}

# summary rows: (dmaplane metric, peer label)
SUMMARY = [
    ("lat8", "ib_send_lat-8"), ("lat8", "ib_send_lat-8-ev"), ("lat8", "ucx-ud_verbs-tag_lat-8"),
    ("lat8", "ucx-tcp-tag_lat-8"),
    ("lat8", "fi_pingpong-verbs+ofi_rxm-rdm-8"), ("lat8", "fi_pingpong-verbs-msg-8"),
    ("lat8", "fi_pingpong-tcp-rdm-8"),
    ("lat8", "qperf-tcp_lat"), ("lat8", "dp-rlat"),
    ("lat1M", "ib_send_lat-1M"),
    ("bw1M", "ib_write_bw-1M"), ("bw1M", "ib_read_bw-1M"),
    ("bw1M", "ucx-ud_verbs-tag_bw-1M"), ("bw1M", "ucx-tcp-tag_bw-1M"), ("bw1M", "fi_pingpong-verbs+ofi_rxm-rdm-1048576"),
    ("bw1M", "fi_pingpong-verbs-msg-1048576"), ("bw1M", "fi_pingpong-tcp-rdm-1048576"),
    ("bw1M", "iperf3"),
    ("bw1M", "qperf-tcp_bw"), ("bw1M", "dp-rbw"),
]
METRIC = {"lat8": "latency 8 B, us", "lat1M": "latency 1 MiB, us",
          "bw1M": "bandwidth 1 MiB, MB/s"}


def fmt(v, why):
    return "%.1f" % v if v is not None else "n/a (%s)" % why


def main():
    secs, notes = sections(sys.argv[1])
    if len(sys.argv) > 2:
        notes += [n for n in sections(sys.argv[2])[1] if n.startswith("# node")]
        servers(sys.argv[2])
    print("# make bench2: two QEMU TCG VMs (2 vCPUs each) on one 2-core host;")
    print("# node 0 (10.77.0.1) runs the clients, node 1 (10.77.0.2) the servers,")
    print("# over eth0 (virtio-net on a UNIX stream socket) and rxe0 (soft-RoCE on it).")
    print("# One run; only ratios within this file mean much.")
    for n in notes:
        print(n if n.startswith("#") else "# " + n)
    print()
    for label in ("dp-rlat", "dp-rbw", "dp-rbw-w64", "dp-rrate"):
        sec = secs.get(label)
        tab = [ln for ln in sec["lines"] if not ln.startswith("# client")] if sec else []
        if sec and sec["rc"] == 0 and tab:
            print("\n".join(tab))
        else:
            print("# dp-bench %s: n/a (%s)" % (label[3:], reason(sec)))
        print()
    print("# dp-bench with both ends on node 0 (--peer 127.0.0.1): the remote")
    print("# modes' code over dmaplane's local transport and loopback TCP")
    for label in ("local-rlat", "local-rbw", "local-rrate"):
        sec = secs.get(label)
        tab = [ln for ln in sec["lines"] if not ln.startswith("dp-bench:")] if sec else []
        if sec and sec["rc"] == 0 and tab:
            print("\n".join(tab))
        else:
            print("# dp-bench %s: n/a (%s)" % (label, reason(sec)))
        print()
    print("# peers (lat: half round trip, us; bw: MB/s = 10^6 bytes/s;")
    print("# perftest and UCX print MiB/s, converted; fi_pingpong 1 MiB is ping-pong)")
    print("%-54s %s" % ("peer", "value"))
    for label, what, fn, unit in PEERS:
        v, why = value(secs, label, fn)
        print("%-54s %s" % (what + ", " + unit, fmt(v, why)))
    print()
    dp = {k: value(secs, lab, fn) for k, (lab, fn) in DMAPLANE.items()}
    names = {label: what for label, what, _, _ in PEERS}
    funcs = {label: fn for label, _, fn, _ in PEERS}
    print("# summary: dmaplane against each peer (latency: dmaplane/peer, lower is")
    print("# better for dmaplane; bandwidth: dmaplane/peer, higher is better)")
    print("%-22s %-48s %10s %10s %7s" % ("metric", "peer", "peer", "dmaplane", "ratio"))
    for metric, label in SUMMARY:
        pv, pwhy = value(secs, label, funcs[label])
        dv, dwhy = dp[metric]
        ratio = "%.2f" % (dv / pv) if pv and dv else "-"
        print("%-22s %-48s %10s %10s %7s" % (
            METRIC[metric], names[label],
            "%.1f" % pv if pv is not None else "n/a",
            "%.1f" % dv if dv is not None else "n/a", ratio))
    whys = []
    for metric in ("lat8", "lat1M", "bw1M"):
        if dp[metric][0] is None:
            whys.append("# dmaplane %s: n/a (%s)" % (METRIC[metric], dp[metric][1]))
    whys.append("# (peers' n/a reasons: in the list above)")
    print("\n".join(whys))
    netpipe_table(secs)
    kvstore_table(secs)


def kvstore_table(secs):
    """dp-kvstore between the nodes: dmaplane against ZeroMQ over tcp://,
    from the worker's "kvstore key=value..." lines."""
    print()
    print("# dp-kvstore (parameter server) between the nodes, server on node 1,")
    print("# worker on node 0: push+pull latency (us), MB/s and pushes/s of the")
    print("# push stream; dp/zmq: ZeroMQ's latency over dmaplane's (higher is")
    print("# better for dmaplane), dmaplane's MB/s and pushes/s over ZeroMQ's")
    runs = ("kvstore-dmaplane", "kvstore-zmq-tcp")
    got = {}
    for label in runs:
        sec = secs.get(label)
        if not sec or sec["rc"] != 0:
            print("# %s: n/a (%s)" % (label, reason(sec)))
            continue
        for ln in sec["lines"]:
            if ln.startswith("kvstore "):
                kv = dict(p.split("=", 1) for p in ln.split()[1:] if "=" in p)
                got[(label, int(kv.get("size", 0)))] = kv
    print("%-8s %9s %9s %9s %9s %10s %10s %8s %8s %8s" % (
        "bytes", "dp_us", "zmq_us", "dp_MB", "zmq_MB", "dp_push/s", "zmq_push/s",
        "lat", "MB/s", "push/s"))
    for size in sorted({k[1] for k in got}):
        d = got.get(("kvstore-dmaplane", size), {})
        z = got.get(("kvstore-zmq-tcp", size), {})

        def f(kv, key):
            try:
                return float(kv[key])
            except (KeyError, ValueError):
                return None

        def cell(v, w=9, fmt="%.1f"):
            return ("%" + str(w) + "s") % (fmt % v if v is not None else "-")

        def ratio(a, b):
            return "%8.2f" % (a / b) if a and b else "%8s" % "-"
        dl, zl = f(d, "lat_us"), f(z, "lat_us")
        db, zb = f(d, "bw_MBps"), f(z, "bw_MBps")
        dp_, zp = f(d, "pushes_per_s"), f(z, "pushes_per_s")
        print("%-8d %s %s %s %s %s %s %s %s %s" % (
            size, cell(dl), cell(zl), cell(db), cell(zb), cell(dp_, 10, "%.0f"),
            cell(zp, 10, "%.0f"), ratio(zl, dl), ratio(db, zb), ratio(dp_, zp)))


def netpipe_point(sec, size):
    """(half round trip in us, MB/s) of NetPIPE's line for @size bytes."""
    for ln in sec["lines"]:
        m = re.match(r"\s*\d+:\s+(\d+) bytes\s+\d+ times -->\s+([0-9.]+) Mbps in\s+([0-9.]+) usec", ln)
        if m and int(m.group(1)) == size:
            return float(m.group(3)), float(m.group(2)) / 8
    return None


def netpipe_table(secs):
    print()
    print("# NetPIPE (NPopenmpi) under Open MPI 4.1.4, one rank per node: ob1 over")
    print("# TCP, UCX (rc_verbs on rxe0) and dmaplane's provider (pml cm, mtl ofi);")
    print("# usec: half the round trip; MB/s: 10^6 bytes/s; dp/x: dmaplane's usec")
    print("# over x's (lower is better), then its MB/s over x's (higher is better)")
    runs = ("netpipe-ob1-tcp", "netpipe-ucx", "netpipe-dmaplane")
    for label in runs:
        sec = secs.get(label)
        if not sec or sec["rc"] != 0:
            print("# %s: n/a (%s)" % (label, reason(sec)))
    print("%-8s %9s %9s %9s %9s %9s %9s %8s %8s %8s %8s" % (
        "bytes", "tcp_us", "ucx_us", "dp_us", "tcp_MB", "ucx_MB", "dp_MB",
        "us/tcp", "us/ucx", "MB/tcp", "MB/ucx"))
    for size in (8, 1024, 65536, 1048576):
        pts = []
        for label in runs:
            sec = secs.get(label)
            pts.append(netpipe_point(sec, size) if sec and sec["rc"] == 0 else None)

        def cell(p, i):
            return "%9.1f" % p[i] if p else "%9s" % "-"

        def ratio(a, b, i):
            return "%8.2f" % (a[i] / b[i]) if a and b and b[i] else "%8s" % "-"
        print("%-8d %s %s %s %s %s %s %s %s %s %s" % (
            size, cell(pts[0], 0), cell(pts[1], 0), cell(pts[2], 0),
            cell(pts[0], 1), cell(pts[1], 1), cell(pts[2], 1),
            ratio(pts[2], pts[0], 0), ratio(pts[2], pts[1], 0),
            ratio(pts[2], pts[0], 1), ratio(pts[2], pts[1], 1)))


if __name__ == "__main__":
    main()
