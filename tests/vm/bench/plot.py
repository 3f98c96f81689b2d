#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make bench's plots: PNG files from one run's tables (bench.txt).

Usage: plot.py BENCH.TXT OUTDIR [LABEL]

Reads the tables dp-bench, dp-kvstore and bench/peers.sh print (the text
between DMAPLANE-BENCH-BEGIN and -END that tests/run-bench.sh keeps in
build/bench/bench.txt) and writes, with matplotlib (python3-matplotlib):

  latency.png    half round trip against message size, log-log, one line
                 per transport (dp-bench lat, and NetPIPE under Open MPI)
  bandwidth.png  MB/s against message size, log-log (dp-bench bw, NetPIPE,
                 ucx_perftest tag_bw, bwdiag's rows in huge pages)
  scaling.png    8-byte half round trip between two ranks against N
  matcher.png    the tag matcher alone (dmaplane_matchbench.ko): ns per
                 match against queue depth, dmaplane's against a list
  kvstore.png    dp-kvstore over dmaplane against ZeroMQ (ipc, tcp): push+
                 pull latency, bandwidth and pushes/s at each value size

A plot whose table is missing (a failed or skipped run) is left out and
said so on stderr; cells that say "error" or "-" are gaps in a line.
"""

import os
import re
import sys

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def num(s):
    try:
        return float(s)
    except ValueError:
        return None


def tables(path):
    """{title: (header fields, [row fields])}: each table follows a
    "# dp-bench MODE:" (or other "# ...") title line, starts at a header
    line and ends at a blank line."""
    out = {}
    title = None
    head = None
    rows = []
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if not line.strip():
            if title and head:
                out.setdefault(title, (head, rows))
            head, rows = None, []
            continue
        if line.startswith("#"):
            if head is None:
                m = re.match(r"# (dp-bench \w+|NetPIPE ping-pong|matchbench|ucx_perftest)",
                             line)
                if m:
                    title = m.group(1)
            continue
        f = line.split()
        if head is None:
            head = f
            continue
        # "8 B", "1 KiB": one size in two fields
        if len(f) > 1 and f[1] in UNITS and re.match(r"^\d+$", f[0]):
            f = [str(int(f[0]) * UNITS[f[1]])] + f[2:]
        rows.append(f)
    if title and head:
        out.setdefault(title, (head, rows))
    return out


def series(table, cols):
    """{column: ([x], [y])} for the numeric cells of @cols."""
    head, rows = table
    res = {}
    for c in cols:
        if c not in head:
            continue
        i = head.index(c)
        xs, ys = [], []
        for r in rows:
            if i < len(r) and num(r[0]) and num(r[i]) is not None and num(r[i]) > 0:
                xs.append(num(r[0]))
                ys.append(num(r[i]))
        if xs:
            res[c] = (xs, ys)
    return res


def ucx_bw(table):
    """[(label, ([x], [y]))]: ucx_perftest's tag_bw MB/s, a line per
    UCX_TLS label (posix, cma, sm), from 1 KiB."""
    if not table:
        return []
    head, rows = table
    need = ("label", "test", "bytes", "bw_MBps")
    if any(c not in head for c in need):
        return []
    il, it, ib, iv = (head.index(c) for c in need)
    res = {}
    for r in rows:
        if len(r) <= iv or r[it] != "tag_bw" or not num(r[ib]) or num(r[ib]) < 1024:
            continue
        if num(r[iv]):
            xs, ys = res.setdefault(r[il], ([], []))
            xs.append(num(r[ib]))
            ys.append(num(r[iv]))
    return [("ucx_perftest tag_bw " + k, xy) for k, xy in res.items()]


def bwdiag_thp(table):
    """[(label, ([x], [y]))]: bwdiag's thp=on rows (buffers in huge
    pages), dmaplane's blocking window of 16 and CMA's window of 16.  Its
    header's column names are two words each: the cells are by position
    (size, thp, dp-spin w16, dp-block w16, dp-block w1, cma w16, ...)."""
    if not table:
        return []
    res = {"dmaplane, huge pages (bwdiag)": ([], []), "cma, huge pages (bwdiag)": ([], [])}
    for r in table[1]:
        if len(r) < 6 or r[1] != "on" or not num(r[0]):
            continue
        for lab, i in (("dmaplane, huge pages (bwdiag)", 3), ("cma, huge pages (bwdiag)", 5)):
            if num(r[i]):
                res[lab][0].append(num(r[0]))
                res[lab][1].append(num(r[i]))
    return [(k, xy) for k, xy in res.items() if xy[0]]


def kvstore_lines(path):
    """dp-kvstore's "kvstore key=value..." lines; a dmaplane run with a
    system call per operation (submit=single) is transport
    dmaplane-single, a run waiting by polling (wait=poll) TRANSPORT-poll."""
    res = []
    for line in open(path, errors="replace"):
        if line.startswith("kvstore "):
            kv = dict(p.split("=", 1) for p in line.split()[1:] if "=" in p)
            if kv.get("submit") == "single":
                kv["transport"] = kv.get("transport", "") + "-single"
            if kv.get("wait") == "poll":
                kv["transport"] = kv.get("transport", "") + "-poll"
            res.append(kv)
    return res


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    src, outdir = sys.argv[1], sys.argv[2]
    label = sys.argv[3] if len(sys.argv) > 3 else ""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot.py: no matplotlib (apt-get install python3-matplotlib)")
    os.makedirs(outdir, exist_ok=True)
    t = tables(src)
    note = "QEMU TCG, one run" + (": " + label if label else "")
    written = []

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, name), dpi=100)
        plt.close(fig)
        written.append(name)

    def loglog(name, title, ylabel, lines):
        lines = [(lab, xy) for lab, xy in lines if xy]
        if not lines:
            print("plot.py: %s: no data" % name, file=sys.stderr)
            return
        fig, ax = plt.subplots(figsize=(7, 4.5))
        # matplotlib's colours repeat after ten lines: dashed after them
        for i, (lab, (xs, ys)) in enumerate(lines):
            ax.plot(xs, ys, marker="o", markersize=3, label=lab,
                    linestyle="-" if i < 10 else "--")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size, bytes")
        ax.set_ylabel(ylabel)
        ax.set_title("%s\n(%s)" % (title, note), fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, name)

    lat = t.get("dp-bench lat")
    npp = t.get("NetPIPE ping-pong")
    lines = []
    if lat:
        for c, (xs, ys) in series(lat, ["dmaplane", "dp_rs", "rs_uring",
                                        "rs_sqpoll", "pipe", "unix", "cma",
                                        "shm2copy"]).items():
            lines.append(("dp-bench " + c, (xs, ys)))
    if npp:
        for c, (xs, ys) in series(npp, ["vader_us", "ucx_us", "dp_us"]).items():
            lines.append(("NetPIPE/Open MPI " + c[:-3].replace("dp", "dmaplane"),
                          (xs, ys)))
    loglog("latency.png", "Half round trip against message size (lower is better)",
           "microseconds", lines)

    bw = t.get("dp-bench bw")
    lines = []
    if bw:
        for c, xy in series(bw, ["dmaplane", "pipe", "unix", "cma", "shm2copy"]).items():
            lines.append(("dp-bench " + c, xy))
    if npp:
        for c, xy in series(npp, ["vader_MB", "ucx_MB", "dp_MB"]).items():
            lines.append(("NetPIPE/Open MPI " + c[:-3].replace("dp", "dmaplane"), xy))
    lines += ucx_bw(t.get("ucx_perftest")) + bwdiag_thp(t.get("dp-bench bwdiag"))
    loglog("bandwidth.png", "Bandwidth against message size (higher is better)",
           "MB/s (10^6 bytes/s)", lines)

    sc = t.get("dp-bench scaling")
    if sc:
        s = series(sc, ["latency", "spec1000", "wild1000"])
        if s:
            fig, ax = plt.subplots(figsize=(6, 4))
            labels = {"latency": "N-1 posted receives",
                      "spec1000": "+1000 for specific sources",
                      "wild1000": "+1000 for any source"}
            for c, (xs, ys) in s.items():
                ax.plot(xs, ys, marker="o", label=labels[c])
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs)
            ax.set_xticklabels([str(int(x)) for x in xs])
            ax.set_xlabel("processes N")
            ax.set_ylabel("half round trip, microseconds")
            ax.set_title("8-byte latency between ranks 0 and 1 against N\n(%s)" % note,
                         fontsize=10)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
            save(fig, "scaling.png")
    else:
        print("plot.py: scaling.png: no data", file=sys.stderr)

    mb = t.get("matchbench")
    if mb:
        head, rows = mb
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for case in dict.fromkeys(r[0] for r in rows):
            for col, style in (("dmaplane", "-"), ("list", "--")):
                i = head.index(col)
                xy = [(num(r[1]), num(r[i])) for r in rows
                      if r[0] == case and len(r) > i and num(r[1]) and num(r[i])]
                if xy:
                    ax.plot([x for x, _ in xy], [y for _, y in xy], style,
                            marker="o", markersize=3, label="%s, %s" % (case, col))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("queue depth D (entries before the one matched)")
        ax.set_ylabel("ns per operation")
        ax.set_title("The tag matcher alone against a list-walking matcher\n(%s)" % note,
                     fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, "matcher.png")
    else:
        print("plot.py: matcher.png: no data", file=sys.stderr)

    kv = kvstore_lines(src)
    if kv:
        sizes = sorted({int(k["size"]) for k in kv if "size" in k})
        trans = [x for x in ("dmaplane", "dmaplane-single", "dmaplane-poll", "zmq-ipc",
                             "zmq-ipc-poll", "zmq-tcp")
                 if any(k.get("transport") == x for k in kv)]
        metrics = [("lat_us", "push+pull latency, us (lower is better)"),
                   ("bw_MBps", "bandwidth, MB/s"), ("pushes_per_s", "pushes/s")]
        fig, axes = plt.subplots(1, 3, figsize=(12, 4))
        w = 0.8 / max(len(trans), 1)
        for ax, (key, what) in zip(axes, metrics):
            for j, tr in enumerate(trans):
                vals = []
                for sz in sizes:
                    v = [num(k.get(key, "")) for k in kv
                         if k.get("transport") == tr and int(k.get("size", 0)) == sz]
                    vals.append(v[0] if v and v[0] else 0)
                ax.bar([i + j * w for i in range(len(sizes))], vals, w, label=tr)
            ax.set_xticks([i + w * (len(trans) - 1) / 2 for i in range(len(sizes))])
            ax.set_xticklabels(["%d KiB" % (s >> 10) if s < (1 << 20) else
                                "%d MiB" % (s >> 20) for s in sizes])
            ax.set_yscale("log")
            ax.set_title(what, fontsize=9)
            ax.grid(True, axis="y", alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.suptitle("dp-kvstore (parameter server): dmaplane against ZeroMQ (%s)" % note,
                     fontsize=10)
        save(fig, "kvstore.png")
    else:
        print("plot.py: kvstore.png: no data", file=sys.stderr)
    print("plot.py: wrote %s in %s" % (", ".join(written) or "nothing", outdir))


if __name__ == "__main__":
    main()
