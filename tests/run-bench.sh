#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench: run dp-bench in a VM on Debian's stock kernel (no KASAN, so
# the numbers mean something; still QEMU TCG), with the comparators in the
# same VM.  Prints the tables; Documentation/bench/ keeps dated runs of
# them (one file per run).  The real peers
# (ucx_perftest, NetPIPE over Open MPI's vader, UCX and dmaplane's
# libfabric provider) run from the host's root, shared read-only over
# virtio-9p (run-vm.sh -R) and entered with chroot.
#
# Usage: tests/run-bench.sh [1node|2node|smoke]
# 2node (make bench2): two VMs on one Ethernet segment with soft-RoCE on
# eth0, dp-bench's remote modes against perftest, UCX over rc_verbs,
# libfabric's fi_pingpong, iperf3 and qperf between them; the tables and
# a summary of ratios go to build/bench/bench2.txt.
# smoke (make check): the one-node job with every mode and every peer at
# tiny sizes and iterations (a few minutes), judged by tests/vm/results.py
# (one case per mode and per peer; peers that are not installed are
# skipped); logs in build/bench-smoke/.  DMAPLANE_BENCH_KO=DIR uses the
# module already built in DIR (make check's $BUILD/ko-stock) instead of
# building it.

set -eu
mode=${1:-1node}
case $mode in 1node|2node|smoke) ;; *) echo "usage: $0 [1node|2node|smoke]" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
. tests/vm/common.sh

stock=$(stock_version)
# Which code: taken before the build (an edit during the run is not in it).
rev=$(git describe --always --dirty 2>/dev/null || echo '?')
# The bench VM's CPU has no ERMS and FSRM: with them the guest kernel
# copies between address spaces with "rep movsb", which QEMU's TCG runs
# at a quarter of memcpy()'s speed and, on large buffers, at a fiftieth
# (Documentation/bench/2026-12-03-erms.rst): that measured TCG, for
# dmaplane and its peers alike.  DMAPLANE_QEMU_CPU= overrides it.
DMAPLANE_QEMU_CPU=${DMAPLANE_QEMU_CPU:-max,la57=off,erms=off,fsrm=off}
export DMAPLANE_QEMU_CPU
# One socket of two cores, as every record in Documentation/bench/ was
# measured (run-vm.sh gives one VM two sockets, for the test kernels).
DMAPLANE_QEMU_SMP=${DMAPLANE_QEMU_SMP:-2}
export DMAPLANE_QEMU_SMP
if [ "$mode" = smoke ]; then
	scripts/deps.sh all
	out=$BUILD/bench-smoke
else
	scripts/deps.sh bench
	out=$BUILD/bench
fi
make -s BUILD="$BUILD" lib tools examples
# The provider for NetPIPE over dmaplane (peers.sh); without libfabric
# that run is skipped.
pkg-config --exists libfabric && make -s BUILD="$BUILD" fabric
kodir=${DMAPLANE_BENCH_KO:-}
if [ -z "$kodir" ]; then
	build_ko stock "/usr/src/linux-headers-$stock"
	kodir=$BUILD/ko-stock
fi
mkdir -p "$out"

# The stock kernel's soft-RoCE and 9p modules and libibverbs' rxe
# provider (make_initramfs adds the RDMA core dmaplane.ko needs:
# STOCK_RDMA_MODULES, loaded by load_dmaplane in the job).
mods=/lib/modules/$stock/kernel
set -- "$BUILD"/dp-bench
for m in crypto/crc32_generic net/ipv4/udp_tunnel net/ipv6/ip6_udp_tunnel \
	drivers/infiniband/core/ib_uverbs drivers/infiniband/sw/rxe/rdma_rxe \
	drivers/virtio/virtio_ring drivers/virtio/virtio \
	drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci_modern_dev \
	drivers/virtio/virtio_pci fs/netfs/netfs fs/fscache/fscache \
	net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p; do
	set -- "$@" "$mods/$m.ko:/dmaplane/kmods/$(basename "$m").ko"
done
# DMAPLANE_BENCH_AB=DIR: instead of the bench, an A/B in one boot
# (jobs/bench.sh: ab): DIR's dmaplane.ko (built for the stock kernel, as
# another checkout's build/ko-stock) and this tree's, loaded in turn
# DMAPLANE_BENCH_AB_ROUNDS times (default 3), each running the dp-bench
# modes of DMAPLANE_BENCH_ONLY (default rate,path; "kvstore": dp-kvstore
# over dmaplane); in build/bench/ab.txt.  DMAPLANE_BENCH_AB=self: A is
# this tree's module too, told apart by module parameters:
# DMAPLANE_BENCH_AB_PARAMS_A and _B (NAME=VALUE,NAME=VALUE).
# DMAPLANE_BENCH_AB_ARGS: more dp-bench arguments (commas for spaces);
# DMAPLANE_BENCH_AB_ARGS_A and _B: for A or for B only.
if [ -n "${DMAPLANE_BENCH_AB:-}" ] && [ "$DMAPLANE_BENCH_AB" != self ]; then
	[ -e "$DMAPLANE_BENCH_AB/dmaplane.ko" ] ||
		{ echo "$0: no $DMAPLANE_BENCH_AB/dmaplane.ko" >&2; exit 2; }
	set -- "$@" "$DMAPLANE_BENCH_AB/dmaplane.ko:/dmaplane/ab/dmaplane.ko"
fi
prov=$(ls /usr/lib/*/libibverbs/librxe-rdmav*.so 2>/dev/null | head -1)
[ -n "$prov" ] && set -- "$@" "$prov:$prov" /etc/libibverbs.d/rxe.driver:/etc/libibverbs.d/rxe.driver
set -- "$@" tests/vm/bench:/dmaplane/bench
extra_files="$*"
# shellcheck disable=SC2086
make_initramfs "$out/bench.cpio.gz" "$kodir" $extra_files
args="dmaplane.fabric_build=$(pwd)/$BUILD"
# DMAPLANE_BENCH_ONLY=lat,rate,matchbench,kvstore-dmaplane,peers: only
# these parts of the one-node job (jobs/bench.sh)
[ -n "${DMAPLANE_BENCH_ONLY:-}" ] && args="$args dmaplane.bench_only=$DMAPLANE_BENCH_ONLY"
# DMAPLANE_BENCH_PROFILE=self,rs,rate,bw64k,bw1m,sched64k (any of them): instead of the bench, Linux perf's
# profile of these dp-bench runs (jobs/bench.sh: profile) in
# build/bench/profile.txt
table=bench.txt
if [ -n "${DMAPLANE_BENCH_PROFILE:-}" ]; then
	args="$args dmaplane.bench_profile=$DMAPLANE_BENCH_PROFILE"
	table=profile.txt
fi
if [ -n "${DMAPLANE_BENCH_AB:-}" ]; then
	args="$args dmaplane.bench_ab=${DMAPLANE_BENCH_AB_ROUNDS:-3}"
	for v in pa:PARAMS_A pb:PARAMS_B args:ARGS aa:ARGS_A ab:ARGS_B; do
		eval "val=\${DMAPLANE_BENCH_AB_${v#*:}:-}"
		[ -n "$val" ] && args="$args dmaplane.bench_ab_${v%%:*}=$val"
	done
	table=ab.txt
fi
if [ "$mode" = 2node ]; then
	# ~15 minutes under TCG on 2 host cores (NetPIPE: mpirun across the VMs);
	# node 1 serves, node 0 measures.
	rm -rf "$out/vm2"
	rc=0
	tests/vm/run-vm.sh -k "/boot/vmlinuz-$stock" -i "$out/bench.cpio.gz" \
		-j bench2node -o "$out/vm2" -n 2 -t 3600 -m 3072 -R -a "$args" || rc=$?
	python3 tests/vm/bench/summary2.py "$out/vm2/results-0.log" \
		"$out/vm2/results-1.log" | tee "$out/bench2.txt"
	exit $rc
fi
rm -rf "$out/vm"
timeout=2400
if [ "$mode" = smoke ]; then
	timeout=900
	args="$args dmaplane.bench_smoke=1"
fi
rc=0
tests/vm/run-vm.sh -k "/boot/vmlinuz-$stock" -i "$out/bench.cpio.gz" -j bench \
	-o "$out/vm" -t $timeout -m 4096 -R -a "$args" || rc=$?
# Which code, when and where: runs on different hosts differ by more
# than noise under TCG (Documentation/bench/2026-12-04-63a648d.rst).
{
	echo "# $rev at" \
		"$(date -u '+%Y-%m-%d %H:%M') UTC; host: $(sed -n \
		's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs;" \
		"guest:$(sed -n 's/^# kernel//p' "$out/vm/results-0.log" | head -1)"
	echo
	sed -n '/^DMAPLANE-BENCH-BEGIN/,/^DMAPLANE-BENCH-END/p' "$out/vm/results-0.log" |
		grep -v '^DMAPLANE-'
} | tee "$out/$table"
grep '^DMAPLANE-CASE .* FAIL' "$out/vm/results-0.log" >&2 || :
grep -q '^DMAPLANE-GUEST-DONE rc=0$' "$out/vm/results-0.log" || rc=1
# The plots (latency and bandwidth against size, scaling, kvstore) from
# this run's tables, with Debian's matplotlib (/usr/bin/python3: not a
# python3 of its own earlier in PATH).
if [ "$mode" != smoke ] && [ $table = bench.txt ]; then
	rm -rf "$out/plots"
	/usr/bin/python3 tests/vm/bench/plot.py "$out/bench.txt" "$out/plots" \
		"make bench at $(git rev-parse --short HEAD 2>/dev/null)" || :
fi
exit $rc
