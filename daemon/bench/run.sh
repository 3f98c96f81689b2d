#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The dedup engine's benchmark, side by side with rsync's delta algorithm.
#
#   daemon/bench/run.sh BINDIR WORKDIR        (make dedup-bench)
#
# Makes the data in WORKDIR (once; about 600 MB with rsync's copies):
#   ckpt.0..2   checkpoints of a 64 MiB float32 model, 10% of the 64 KiB
#               blocks updated per step, the step number in the header
#   image.0..1  a tar of 128 MiB of /usr/lib/x86_64-linux-gnu, then the same
#               tree with one file changed (4 KiB inserted in its middle)
#   random.0..1 two unrelated 64 MiB random files (nothing to find)
# then, for each pair OLD -> NEW: dedup-bench (this engine, both nodes in
# one process, memcpy for the wire) and rsync --no-whole-file --stats
# (Debian's rsync, local: sender and receiver over a pipe) with OLD at the
# destination, and prints the table of Documentation/dedup.rst.
set -eu

bin=$1
w=$2
PY=/usr/bin/python3
for t in rsync tar "$PY"; do
	command -v "$t" >/dev/null || { echo "$0: needs $t (scripts/deps.sh bench)" >&2; exit 1; }
done
mkdir -p "$w"

if [ ! -e "$w/ckpt.2" ]; then
	"$bin/dedup-gen" ckpt "$w/ckpt" 64 2 0.10
fi
if [ ! -e "$w/random.1" ]; then
	"$bin/dedup-gen" random "$w/random.0" 64 1
	"$bin/dedup-gen" random "$w/random.1" 64 2
fi
if [ ! -e "$w/image.1" ]; then
	rm -rf "$w/tree"
	mkdir -p "$w/tree"
	# The first 128 MiB (by name) of the regular files there.
	find /usr/lib/x86_64-linux-gnu -maxdepth 1 -type f -printf '%s %p\n' |
		sort -k2 | awk '{ t += $1; if (t > 128 * 1048576) exit; print $2 }' |
		while read -r f; do cp -p "$f" "$w/tree/"; done
	tarit() {
		tar -C "$w" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
			-cf "$1" tree
	}
	tarit "$w/image.0"
	victim=$(ls "$w/tree" | awk '{ a[NR] = $0 } END { print a[int(NR / 2)] }')
	"$PY" - "$w/tree/$victim" <<'PYEOF'
import sys
p = sys.argv[1]
b = open(p, 'rb').read()
m = len(b) // 2
open(p, 'wb').write(b[:m] + bytes((i * 7) & 0xff for i in range(4096)) + b[m:])
PYEOF
	tarit "$w/image.1"
	echo "image: $(ls "$w/tree" | wc -l) files, $victim changed" >"$w/image.txt"
	rm -rf "$w/tree"
fi

now() { date +%s.%N; }
out=$w/results.txt
: >"$out"
for pair in "ckpt.0 ckpt.1" "ckpt.1 ckpt.2" "image.0 image.1" "random.0 random.1"; do
	set -- $pair
	old=$w/$1
	new=$w/$2
	ours=$("$bin/dedup-bench" -r 3 "$old" "$new" 2>"$w/ours-$2.log")
	# rsync: the destination holds OLD under NEW's name; best of 3.
	best=
	for i in 1 2 3; do
		rm -rf "$w/rs"
		mkdir -p "$w/rs"
		cp "$old" "$w/rs/f"
		sync
		t0=$(now)
		rsync --no-whole-file --ignore-times --stats "$new" "$w/rs/f" >"$w/rsync-$2.log"
		t1=$(now)
		cmp -s "$new" "$w/rs/f" || { echo "rsync: $2 differs" >&2; exit 1; }
		best=$(awk -v a="$t0" -v b="$t1" -v m="$best" \
			'BEGIN { t = b - a; if (m == "" || t < m) m = t; printf "%.4f", m }')
	done
	sent=$(sed -n 's/^Total bytes sent: //p' "$w/rsync-$2.log" | tr -d ,)
	recv=$(sed -n 's/^Total bytes received: //p' "$w/rsync-$2.log" | tr -d ,)
	lit=$(sed -n 's/^Literal data: \([0-9,]*\).*/\1/p' "$w/rsync-$2.log" | tr -d ,)
	echo "pair=$1->$2 $ours rsync_sent=$sent rsync_recv=$recv rsync_literal=$lit rsync_time=$best" >>"$out"
	rm -rf "$w/rs"
done
"$PY" "$(dirname "$0")/table.py" "$out"
