#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Format daemon/bench/run.sh's results.txt as the RST tables of
Documentation/dedup.rst (Debian's python3, standard library only)."""
import sys

MIB = 1048576.0


def rows(path):
    for line in open(path):
        d = dict(kv.split('=', 1) for kv in line.split())
        yield {k: (v if k == 'pair' else float(v)) for k, v in d.items()}


def table(head, body):
    cols = list(zip(*([head] + body)))
    w = [max(len(c) for c in col) for col in cols]
    rule = '  '.join('=' * x for x in w)
    fmt = lambda r: '  '.join(c.rjust(x) if i else c.ljust(x)
                              for i, (c, x) in enumerate(zip(r, w)))
    return '\n'.join([rule, fmt(head), rule] + [fmt(r) for r in body] + [rule])


def main():
    rs = list(rows(sys.argv[1]))
    head = ['pair', 'logical MiB', 'ours wire MiB', '(meta)', 'ours %',
            'rsync MiB', '(literal)', 'rsync %', 'ours s', 'rsync s', 'ours eff. MB/s', 'rsync eff. MB/s',
            'ours @1GbE s']
    body = []
    for r in rs:
        lg = r['logical']
        ours = r['wire'] + r['meta']
        rsb = r['rsync_sent'] + r['rsync_recv']
        gbe = r['t_total'] + ours * 8 / 1e9
        body.append([r['pair'], '%.1f' % (lg / MIB),
                     '%.3f' % (ours / MIB), '(%.3f)' % (r['meta'] / MIB),
                     '%.1f' % (100 * ours / lg), '%.3f' % (rsb / MIB),
                     '(%.3f)' % (r['rsync_literal'] / MIB),
                     '%.1f' % (100 * rsb / lg),
                     '%.3f' % r['t_total'], '%.3f' % r['rsync_time'],
                     '%.0f' % (lg / r['t_total'] / 1e6),
                     '%.0f' % (lg / r['rsync_time'] / 1e6), '%.2f' % gbe])
    print(table(head, body))
    print()
    head = ['pair', 'chunks', 'held', 'failed check', 'wire ops', 'local ops',
            'chunk+xxh128 s', 'lookup s', 'plan s', 'exec s', 'end xxh128 s',
            '(end BLAKE2b s)', 'plain memcpy s', 'index build s']
    body = []
    for r in rs:
        body.append([r['pair'], '%d' % r['chunks'],
                     '%d' % r['hits'], '%d' % r['verify_failed'],
                     '%d' % r['wire_ops'], '%d' % r['local_ops'],
                     '%.3f' % r['t_chunk'], '%.3f' % r['t_lookup'],
                     '%.3f' % r['t_plan'], '%.3f' % r['t_exec'],
                     '%.3f' % r['t_check'], '(%.3f)' % r['t_b2'],
                     '%.3f' % r['t_memcpy'],
                     '%.3f' % r['t_index']])
    print(table(head, body))


main()
