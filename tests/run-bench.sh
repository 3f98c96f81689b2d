#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench: run dp-bench in a VM on Debian's stock kernel (no KASAN, so
# the numbers mean something; still QEMU TCG), with the comparators in the
# same VM.  Prints the tables; Documentation/bench/ keeps dated runs of
# them (one file per run).  The real peers
# (ucx_perftest, Open MPI's NetPIPE) run from the host's root, shared
# read-only over virtio-9p (run-vm.sh -R) and entered with chroot.
#
# Usage: tests/run-bench.sh [2node]
# 2node (make bench2): two VMs on one Ethernet segment with soft-RoCE on
# eth0, dp-bench's remote modes against perftest, UCX over rc_verbs,
# libfabric's fi_pingpong, iperf3 and qperf between them; the tables and
# a summary of ratios go to build/bench/bench2.txt.

set -eu
mode=${1:-1node}
case $mode in 1node|2node) ;; *) echo "usage: $0 [2node]" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
. tests/vm/common.sh

scripts/deps.sh bench
KSRC=$(tests/vm/build-kernel.sh)
stock=$(stock_version)
make -s BUILD="$BUILD" lib tools examples
build_ko stock "/usr/src/linux-headers-$stock"
out=$BUILD/bench
mkdir -p "$out"

# The stock kernel's soft-RoCE modules and libibverbs' rxe provider.
mods=/lib/modules/$stock/kernel
set -- "$BUILD"/dp-bench
for m in crypto/crc32_generic net/ipv4/udp_tunnel net/ipv6/ip6_udp_tunnel \
	drivers/infiniband/core/ib_core drivers/infiniband/core/ib_uverbs \
	drivers/infiniband/sw/rxe/rdma_rxe \
	drivers/virtio/virtio_ring drivers/virtio/virtio \
	drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci_modern_dev \
	drivers/virtio/virtio_pci fs/netfs/netfs fs/fscache/fscache \
	net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p; do
	set -- "$@" "$mods/$m.ko:/dmaplane/kmods/$(basename "$m").ko"
done
prov=$(ls /usr/lib/*/libibverbs/librxe-rdmav*.so 2>/dev/null | head -1)
[ -n "$prov" ] && set -- "$@" "$prov:$prov" /etc/libibverbs.d/rxe.driver:/etc/libibverbs.d/rxe.driver
set -- "$@" tests/vm/bench:/dmaplane/bench
extra_files="$*"
# shellcheck disable=SC2086
make_initramfs "$out/bench.cpio.gz" "$BUILD/ko-stock" $extra_files
if [ "$mode" = 2node ]; then
	# ~5 minutes under TCG on 2 host cores; node 1 serves, node 0 measures.
	rm -rf "$out/vm2"
	rc=0
	tests/vm/run-vm.sh -k "/boot/vmlinuz-$stock" -i "$out/bench.cpio.gz" \
		-j bench2node -o "$out/vm2" -n 2 -t 1500 -m 3072 -R || rc=$?
	python3 tests/vm/bench/summary2.py "$out/vm2/results-0.log" \
		"$out/vm2/results-1.log" | tee "$out/bench2.txt"
	exit $rc
fi
rm -rf "$out/vm"
tests/vm/run-vm.sh -k "/boot/vmlinuz-$stock" -i "$out/bench.cpio.gz" -j bench \
	-o "$out/vm" -t 2400 -m 4096 -R
sed -n '/^DMAPLANE-BENCH-BEGIN/,/^DMAPLANE-BENCH-END/p' "$out/vm/results-0.log" |
	grep -v '^DMAPLANE-' | tee "$out/bench.txt"
grep -q '^DMAPLANE-GUEST-DONE rc=0$' "$out/vm/results-0.log"
