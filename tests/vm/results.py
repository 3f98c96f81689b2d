#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge a dmaplane test VM run.

Usage: results.py --ksrc KSRC --label LABEL OUTDIR [NODES]
       results.py --ksrc KSRC --label LABEL --tap FILE --rc N

Reads OUTDIR/results-N.log (the guest job's records, see
tests/vm/jobs/lib.sh) and OUTDIR/console-N.log (the kernel console), and
prints one line per test: "PASS label/name" or "FAIL label/name: why".
KUnit output is parsed by the kernel's own tools/testing/kunit/kunit.py.
The kernel console fails the run when it shows a panic, oops, BUG, WARNING,
KASAN, lockdep, kmemleak or hung-task report; the offending lines are
printed.  Exit status: 0 when everything passed.
"""

import argparse
import json
import os
import re
import subprocess
import sys

# Kernel console lines that mean the guest kernel is unhealthy.
KERNEL_BAD = re.compile(
    r"Kernel panic|kernel BUG at|BUG: |WARNING: |Oops|"
    r"general protection fault|KASAN|UBSAN|"
    r"possible circular locking|possible recursive locking|"
    r"inconsistent lock state|suspicious RCU usage|"
    r"lock held when returning|bad unlock balance|"
    r"sleeping function called from invalid context|"
    r"unreferenced object|suspected memory leak|"
    r"blocked for more than|list_(add|del) corruption|refcount_t: |"
    r"Unable to handle kernel|Call Trace:"
)
TAP_RESULT = re.compile(r"^(not ok|ok) (\d+) (?:- )?([^#]*?)\s*(#\s*(SKIP|TODO).*)?$")
# kselftest_harness.h of 6.1 names a test on its RUN line; its SKIP result
# line ("ok N # SKIP reason") carries no name.
HARNESS_RUN = re.compile(r"^#\s+RUN\s+(\S+) \.\.\.")


# A job that injects allocation failures (jobs/faults.sh) brackets them on
# the console with these markers.  Inside, each injected failure prints
# "FAULT_INJECTION: forcing a failure" and, at verbose=2, a stack trace
# ("Call Trace:"); an allocation that fails because of it may print a
# warn_alloc() report with a trace.  Only those "Call Trace:" lines (and
# INJECTED_WARN below) are accepted there: any other bad line (BUG,
# WARNING, KASAN, lockdep ...) and any trace that follows something else
# still fail the run.
FAULTS_BEGIN = "DMAPLANE-FAULTS-BEGIN"
FAULTS_END = "DMAPLANE-FAULTS-END"
INJECTED_HEAD = re.compile(r"FAULT_INJECTION: forcing a failure|"
                           r"page allocation failure: |vmalloc error: ")
# Warnings of the core kernel that an injected failure sets off by design,
# accepted (with their trace) only inside that window: 6.1's dma_buf_vmap()
# has WARN_ON_ONCE() on any exporter's vmap error, -ENOMEM included.
INJECTED_WARN = re.compile(r"WARNING: CPU: \d+ PID: \d+ at "
                           r"drivers/dma-buf/dma-buf\.c:\d+ dma_buf_vmap\+")


def drop_injected_traces(console, bad):
    """The indices in bad, without the traces of injected failures."""
    keep = []
    window = False
    head = False
    bad_set = set(bad)
    for i, line in enumerate(console):
        if FAULTS_BEGIN in line:
            window = True
        elif FAULTS_END in line:
            window = False
        if window and INJECTED_HEAD.search(line):
            head = True
        if i not in bad_set:
            continue
        if window and INJECTED_WARN.search(line):
            head = True
            continue
        if window and head and "Call Trace:" in line and \
                not KERNEL_BAD.search(line.replace("Call Trace:", "")):
            head = False
            continue
        keep.append(i)
    return keep


def emit(results, ok, name, why=""):
    results.append((ok, name, why))


def parse_kselftest(lines, prefix, rc, results):
    seen = 0
    running = None
    # A test's own lines: since its RUN line for kselftest_harness.h
    # ("# file:line:..." and TH_LOG), since the previous result for any
    # other TAP producer (tests/twonode/evil_peer.c: "# " lines).
    said = []
    for line in lines:
        run = HARNESS_RUN.match(line)
        if run:
            running = run.group(1)
            said = []
            continue
        if line.startswith("#"):
            said.append(line.lstrip("# ").strip())
        m = TAP_RESULT.match(line.strip() if line.startswith(" ") else line)
        if not m or line.startswith(" "):
            continue
        seen += 1
        status, _, name, comment, directive = m.groups()
        if not name and running:
            name = running
        running = None
        if directive and directive.upper() == "SKIP":
            why = re.sub(r"^#\s*SKIP\s*", "", comment, flags=re.I) or "skipped"
            results.append((None, f"{prefix}/{name}", why))
        else:
            # A failure says why in the summary: the test's last lines
            # before its result (the assertion and its TH_LOG).
            why = "not ok" + "".join(f"\n  {l}" for l in said[-6:] if l)
            emit(results, status == "ok", f"{prefix}/{name}", "" if status == "ok" else why)
        said = []
    if rc != 0 and not any(ok is False for ok, n, _ in results if n.startswith(prefix + "/")):
        emit(results, False, f"{prefix}", f"exited {rc} without a failing test (crash?)")
    if seen == 0:
        emit(results, False, f"{prefix}", "printed no test result")


def parse_ktap(lines, prefix, rc, ksrc, results):
    """Parse KUnit output with the kernel's kunit.py; one result per case."""
    # Suites loaded from a module print no top-level KTAP header in 6.1
    # (6.12 prints one): add one where missing, so that kunit.py sees the
    # suites as one test plan.
    suites = [l for l in lines if re.match(r"^(not )?ok \d+ ", l)]
    ktap = "\n".join(lines) + "\n"
    if not any(l.startswith("KTAP version") for l in lines[:3]):
        ktap = "KTAP version 1\n1..%d\n" % max(len(suites), 1) + ktap
    kunit = os.path.join(ksrc, "tools/testing/kunit/kunit.py")
    proc = subprocess.run([sys.executable, kunit, "parse", "--json"],
                          input=ktap, capture_output=True, text=True)
    text = proc.stdout
    start = text.find("\n{")
    cases = 0
    if start >= 0:
        def walk(group, path):
            nonlocal cases
            for case in group.get("test_cases", []):
                cases += 1
                name = f"{prefix}/{path}{case['name']}"
                if case["status"] == "PASS":
                    emit(results, True, name)
                elif case["status"] == "SKIP":
                    results.append((None, name, "skipped"))
                else:
                    emit(results, False, name, case["status"])
            for sub in group.get("sub_groups", []):
                walk(sub, f"{path}{sub['name']}.")
        walk(json.loads(text[start:]), "")
    if proc.returncode != 0 or cases == 0:
        emit(results, False, prefix, "kunit.py parse: exit %d, %d cases:\n%s" %
             (proc.returncode, cases, (text[:start] if start >= 0 else text)[-1500:] + proc.stderr[-500:]))
    if rc != 0:
        emit(results, False, prefix + "/insmod", f"insmod exited {rc}")


def judge_node(outdir, node, nodes, label, ksrc, results):
    res = os.path.join(outdir, f"results-{node}.log")
    con = os.path.join(outdir, f"console-{node}.log")
    prefix = label if nodes == 1 else f"{label}/node{node}"
    try:
        lines = open(res, errors="replace").read().replace("\r", "").split("\n")
    except OSError:
        lines = []
    section = None
    body = []
    done = False
    for line in lines:
        if line.startswith("DMAPLANE-BEGIN "):
            _, kind, name = line.split(None, 2)
            section = (kind, name)
            body = []
            continue
        if line.startswith("DMAPLANE-END ") and section:
            rc = int(line.rsplit("rc=", 1)[1]) if "rc=" in line else 1
            kind, name = section
            if kind == "kselftest":
                parse_kselftest(body, f"{prefix}/{name}", rc, results)
            elif kind == "ktap":
                parse_ktap(body, f"{prefix}/kunit", rc, ksrc, results)
            elif kind == "kmemleak":
                leaks = [l for l in body if "unreferenced object" in l]
                emit(results, not leaks, f"{prefix}/kmemleak",
                     "\n".join(body[:60]) if leaks else "")
            section = None
            continue
        if section:
            body.append(line)
            continue
        if line.startswith("DMAPLANE-CASE "):
            parts = line.split(None, 3)
            name, status = parts[1], parts[2]
            why = parts[3] if len(parts) > 3 else ""
            if status == "SKIP":
                results.append((None, f"{prefix}/{name}", why))
            else:
                emit(results, status == "PASS", f"{prefix}/{name}", why)
        elif line.startswith("DMAPLANE-GUEST-DONE") or line.startswith("DMAPLANE-KILL-VM"):
            # The job ran to its end, or to where it had the VM killed.
            done = True
    emit(results, done, f"{prefix}/guest-finished",
         "the guest never finished its job (crash or hang):\n" +
         "\n".join(l for l in lines[-20:] if l))

    try:
        console = open(con, errors="replace").read().replace("\r", "").split("\n")
    except OSError:
        console = []
    bad = [i for i, l in enumerate(console) if KERNEL_BAD.search(l)]
    bad = drop_injected_traces(console, bad)
    why = ""
    if bad:
        first = bad[0]
        why = "kernel reported a problem:\n" + "\n".join(console[max(0, first - 5):first + 40])
    elif not done:
        why = ""
    emit(results, not bad, f"{prefix}/kernel-log-clean", why)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ksrc", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--tap", help="judge one TAP output file instead of a VM run")
    ap.add_argument("--rc", type=int, default=0, help="exit status of the --tap program")
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("nodes", type=int, nargs="?", default=1)
    args = ap.parse_args()

    results = []
    if args.tap:
        lines = open(args.tap, errors="replace").read().split("\n")
        parse_kselftest(lines, args.label, args.rc, results)
    else:
        for node in range(args.nodes):
            judge_node(args.outdir, node, args.nodes, args.label, args.ksrc, results)
    failed = 0
    for ok, name, why in results:
        if ok is None:
            print(f"SKIP {name}: {why}")
        elif ok:
            print(f"PASS {name}")
        else:
            failed += 1
            print(f"FAIL {name}: {why}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
