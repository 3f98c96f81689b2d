#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench, in the guest (run from jobs/bench.sh): the real peers beside
# dp-bench.  The host's root is shared read-only over virtio-9p (run-vm.sh
# -R), and UCX's ucx_perftest and NetPIPE (NPopenmpi) run in a chroot into
# it, server and client (or both ranks) on 127.0.0.1 inside the guest.
# NetPIPE runs three times with Open MPI 4.1: over its shared-memory BTL
# (ob1 + vader), over UCX (pml ucx) and over dmaplane (pml cm, ofi MTL,
# the libfabric provider build/fabric/libdmaplane-fi.so from the host path
# given as dmaplane.fabric_build=), then side by side.
#
# Every peer run is a case (peer-...): it fails when the peer is installed
# but printed no numbers, and is skipped when it is not installed
# (scripts/deps.sh bench).  Exit status: the number of failed cases.
# SMOKE=1 (jobs/bench.sh under make check): small sizes, few iterations.

. /dmaplane/jobs/lib.sh
. /dmaplane/bench/hostroot.sh
if ! hostroot_mount; then
	echo "DMAPLANE-CASE peers FAIL no host root over 9p (run-vm.sh -R)"
	exit 1
fi
B=$(cmdline dmaplane.fabric_build "")

# ucx_perftest: one server per test, client on 127.0.0.1.
port=13337
ucx() {	# label tls test size iters
	if [ ! -x $H/usr/bin/ucx_perftest ]; then
		echo "DMAPLANE-CASE peer-ucx-$1-$3-$4 SKIP no ucx_perftest (ucx-utils)"
		return
	fi
	# A second try on a fresh port when the first printed no result: on
	# a loaded host the client may come before the server listens.
	for try in 1 2; do
		port=$((port + 1))
		in_host env UCX_TLS="$2" timeout 120 ucx_perftest -p $port \
			>/tmp/ucx-server.log 2>&1 &
		spid=$!
		wait_listen $port	# the server is slow to start under TCG
		r=$(in_host env UCX_TLS="$2" timeout 120 ucx_perftest 127.0.0.1 -p $port \
			-t "$3" -s "$4" -n "$5" 2>/tmp/ucx-client.log | grep '^Final:')
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
		[ -n "$r" ] && break
		echo "# ucx-$1-$3: try $try printed no result: $(tail -2 /tmp/ucx-client.log | tr '\n' ' ')"
	done
	# Final: iters lat50 lat_avg lat_overall bw_avg bw_overall mr_avg mr_overall
	set -- "$1" "$2" "$3" "$4" $r
	if [ -z "$6" ]; then
		printf '%-10s %-16s %-8s %9s %10s %10s %10s\n' "$1" "$2" "$3" "$4" error error error
		tail -3 /tmp/ucx-client.log
		tail -3 /tmp/ucx-server.log
		echo "DMAPLANE-CASE peer-ucx-$1-$3-$4 FAIL no Final: line"
		fails=$((fails + 1))
	else
		# UCX prints MiB/s (2^20 bytes): MB/s here is 10^6, as dp-bench's
		mb=$(awk -v m="${11}" 'BEGIN { printf "%.2f", m * 1.048576 }')
		printf '%-10s %-16s %-8s %9s %10s %10s %10.0f\n' "$1" "$2" "$3" "$4" "$9" "$mb" "${13}"
		echo "DMAPLANE-CASE peer-ucx-$1-$3-$4 PASS"
	fi
}

echo "# ucx_perftest $(in_host dpkg-query -W -f='${Version}' ucx-utils 2>/dev/null):"
echo "# lat: overall one-way latency (usec); bw: overall MB/s (10^6 bytes/s; UCX prints MiB/s);"
echo "# msg/s: overall message rate (tag_bw at 8 bytes: dp-bench rate's comparison)"
printf '%-10s %-16s %-8s %9s %10s %10s %10s\n' label UCX_TLS test bytes lat_us bw_MBps msg/s
if [ "$SMOKE" = 1 ]; then
	ucx posix posix,self tag_lat 8 20
	ucx posix posix,self tag_bw 8 100
	ucx cma cma,posix,self tag_bw 65536 10
	ucx sm sm,self tag_bw 65536 10
else
	# tag_lat: 10,000 round trips after UCX's 10,000 warm-up ones (OSU's
	# count for small messages; 500 measured one millisecond, which one
	# stall of the guest moved by 5x)
	ucx posix posix,self tag_lat 8 10000
	ucx cma cma,posix,self tag_lat 8 10000
	ucx posix posix,self tag_bw 8 200000
	# tag_bw from 1 to 64 MiB: posix (two copies), cma (one) and sm (UCX's
	# choice among its shared-memory transports)
	for lt in posix:posix,self cma:cma,posix,self sm:sm,self; do
		label=${lt%%:*} tls=${lt#*:}
		ucx $label $tls tag_bw 1048576 100
		ucx $label $tls tag_bw 4194304 50
		ucx $label $tls tag_bw 16777216 20
		ucx $label $tls tag_bw 67108864 10
	done
fi

# NetPIPE over Open MPI: np NAME MPIRUN-OPTIONS...: one run of NPopenmpi
# (-p 0: powers of two only), its output in /tmp/np-NAME.out (the
# guest's view of the chroot's /tmp).  dmaplane also needs every rank's
# ofi MTL to have chosen the dmaplane provider (mtl_base_verbose's
# "mtl:ofi:provider: NAME" lines, as in jobs/fabric.sh).
npmax=67108864
[ "$SMOKE" = 1 ] && npmax=1024
mpiver=$(in_host dpkg-query -W -f='${Version}' openmpi-bin 2>/dev/null)
npver=$(in_host dpkg-query -W -f='${Version}' netpipe-openmpi 2>/dev/null)
np() {
	name=$1
	shift
	rm -f $H/tmp/np-$name.out
	if [ ! -x $H/usr/bin/NPopenmpi ] || ! chroot $H test -x /usr/bin/mpirun; then
		echo "DMAPLANE-CASE peer-netpipe-$name SKIP no NPopenmpi or mpirun (netpipe-openmpi)"
		return
	fi
	echo "# netpipe-$name: mpirun -np 2 $*"
	t0=$(date +%s)
	in_host FI_PROVIDER_PATH="$B/fabric" LD_LIBRARY_PATH="$B" \
		timeout 900 mpirun --allow-run-as-root -np 2 "$@" \
		NPopenmpi -l 8 -u $npmax -p 0 -o /tmp/np-$name.out >/tmp/np-$name.log 2>&1
	rc=$?
	echo "# netpipe-$name: exit $rc, $(($(date +%s) - t0)) s"
	why=
	[ -s $H/tmp/np-$name.out ] || why="no output; "
	[ $rc = 0 ] || why="${why}mpirun exited $rc; "
	if [ "$name" = dmaplane ]; then
		provs=$(mpi_providers 2 /tmp/np-$name.log) || why="$why$provs; "
	fi
	if [ -n "$why" ]; then
		grep -m 5 -iE 'error|abort|unable|not found|signal' /tmp/np-$name.log
		tail -8 /tmp/np-$name.log
		echo "DMAPLANE-CASE peer-netpipe-$name FAIL $why"
		fails=$((fails + 1))
	else
		echo "DMAPLANE-CASE peer-netpipe-$name PASS"
	fi
}

echo
echo "# NetPIPE $npver (NPopenmpi), Open MPI $mpiver, 2 ranks on this VM"
np vader --mca pml ob1 --mca btl self,vader --mca btl_vader_single_copy_mechanism cma
# UCX on one node: its shared-memory transports (with rxe0 on lo in this
# VM UCX also picks ud_verbs, whose endpoints timed out under TCG:
# "UD endpoint ... unhandled timeout error", abort).  Open MPI 4.1's pml
# ucx declines unless UCX offers one of pml_ucx_tls (verbs, mlx5, ...) on
# one of pml_ucx_devices (mlx*): "any" lifts that.
np ucx --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=sm,self
if [ -n "$B" ] && [ -e "$H$B/fabric/libdmaplane-fi.so" ]; then
	np dmaplane -x FI_PROVIDER_PATH -x LD_LIBRARY_PATH \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include dmaplane \
		--mca mtl_base_verbose 10
else
	echo "DMAPLANE-CASE peer-netpipe-dmaplane SKIP no provider (dmaplane.fabric_build=$B; make fabric)"
fi

# Side by side: NetPIPE's file has bytes, Mbit/s (10^6 bits) and the
# half round trip in seconds per line.
echo
echo "# NetPIPE ping-pong; usec: half the round trip; MB/s: 10^6 bytes/s;"
echo "# vader: --mca pml ob1 --mca btl self,vader; ucx: --mca pml ucx, UCX_TLS=sm,self;"
echo "# dmaplane: --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include dmaplane"
echo "# dp/x: dmaplane's usec over x's (lower is better), then MB/s over x's (higher is better)"
touch $H/tmp/np-vader.out $H/tmp/np-ucx.out $H/tmp/np-dmaplane.out
awk '
FILENAME ~ /vader/ { f = 1 }
FILENAME ~ /ucx/ { f = 2 }
FILENAME ~ /dmaplane/ { f = 3 }
$1 ~ /^[0-9]+$/ { seen[$1] = 1; us[f, $1] = $3 * 1e6; mb[f, $1] = $2 / 8 }
function cell(v) { return v == "" ? sprintf(" %9s", "-") : sprintf(" %9.2f", v) }
function ratio(a, b) { return a == "" || b == "" || b == 0 ? sprintf(" %8s", "-") : sprintf(" %8.2f", a / b) }
END {
	printf "%-8s %9s %9s %9s %9s %9s %9s %8s %8s %8s %8s\n", "bytes",
		"vader_us", "ucx_us", "dp_us", "vader_MB", "ucx_MB", "dp_MB",
		"us/vader", "us/ucx", "MB/vader", "MB/ucx"
	for (s = 8; s <= 67108864; s *= 2) {
		if (!seen[s])
			continue
		printf "%-8d%s%s%s%s%s%s%s%s%s%s\n", s,
			cell(us[1, s]), cell(us[2, s]), cell(us[3, s]),
			cell(mb[1, s]), cell(mb[2, s]), cell(mb[3, s]),
			ratio(us[3, s], us[1, s]), ratio(us[3, s], us[2, s]),
			ratio(mb[3, s], mb[1, s]), ratio(mb[3, s], mb[2, s])
	}
}' $H/tmp/np-vader.out $H/tmp/np-ucx.out $H/tmp/np-dmaplane.out
exit $fails
