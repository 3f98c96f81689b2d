#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench, in the guest: the real peers beside dp-bench.  The host's
# root is shared read-only over virtio-9p (run-vm.sh -R), and UCX's
# ucx_perftest and Open MPI's NetPIPE run in a chroot into it, server and
# client on 127.0.0.1 inside the guest.  Prints tables; never fails the job.

. /dmaplane/bench/hostroot.sh
if ! hostroot_mount; then
	echo "# peers: no host root over 9p (run-vm.sh -R): skipped"
	exit 0
fi

# ucx_perftest: one server per test, client on 127.0.0.1.
port=13337
ucx() {	# label tls test size iters
	port=$((port + 1))
	in_host env UCX_TLS="$2" timeout 120 ucx_perftest -p $port >/tmp/ucx-server.log 2>&1 &
	spid=$!
	sleep 5		# the server is slow to start under TCG
	r=$(in_host env UCX_TLS="$2" timeout 120 ucx_perftest 127.0.0.1 -p $port \
		-t "$3" -s "$4" -n "$5" 2>/tmp/ucx-client.log | grep '^Final:')
	kill $spid 2>/dev/null
	wait $spid 2>/dev/null
	# Final: iters lat50 lat_avg lat_overall bw_avg bw_overall mr_avg mr_overall
	set -- "$1" "$2" "$3" "$4" $r
	if [ -z "$6" ]; then
		printf '%-10s %-16s %-8s %9s %10s %10s\n' "$1" "$2" "$3" "$4" error error
		tail -3 /tmp/ucx-client.log
	else
		printf '%-10s %-16s %-8s %9s %10s %10s\n' "$1" "$2" "$3" "$4" "$9" "${11}"
	fi
}

echo "# ucx_perftest $(in_host dpkg-query -W -f='${Version}' ucx-utils 2>/dev/null):"
echo "# lat: overall one-way latency (usec); bw: overall MB/s (MiB/s as UCX prints it)"
printf '%-10s %-16s %-8s %9s %10s %10s\n' label UCX_TLS test bytes lat_us bw_MBps
ucx posix posix,self tag_lat 8 500
ucx cma cma,posix,self tag_lat 8 500
ucx posix posix,self tag_bw 1048576 100
ucx cma cma,posix,self tag_bw 1048576 100
ucx posix posix,self tag_bw 4194304 50
ucx cma cma,posix,self tag_bw 4194304 50
ucx sm sm,self tag_bw 4194304 50

echo
echo "# NetPIPE $(in_host dpkg-query -W -f='${Version}' netpipe-openmpi 2>/dev/null) (NPopenmpi), Open MPI $(in_host dpkg-query -W -f='${Version}' openmpi-bin 2>/dev/null), mpirun -np 2 --mca btl self,vader:"
echo "# ping-pong; time is half the round trip"
in_host timeout 600 mpirun --allow-run-as-root -np 2 --mca btl self,vader \
	--mca btl_vader_single_copy_mechanism cma \
	NPopenmpi -l 8 -u 4194304 -p 0 -o /tmp/np.out >/tmp/np.log 2>&1
rc=$?
if [ -s $H/tmp/np.out ]; then
	printf '%-10s %12s %12s\n' bytes MB/s usec
	awk '$1==8||$1==64||$1==1024||$1==16384||$1==65536||$1==1048576||$1==4194304 {
		printf "%-10d %12.1f %12.2f\n", $1, $2 / 8, $3 * 1e6 }' $H/tmp/np.out
else
	echo "NetPIPE failed (rc=$rc):"
	tail -20 $H/tmp/np.log 2>/dev/null || tail -20 /tmp/np.log
fi
exit 0
