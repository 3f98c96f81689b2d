#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench: run dp-bench in a VM on Debian's stock kernel (no KASAN, so
# the numbers mean something; still QEMU TCG), with the comparators in the
# same VM.  Prints the tables; README quotes them.

set -eu
cd "$(dirname "$0")/.."
. tests/vm/common.sh

scripts/deps.sh all
KSRC=$(tests/vm/build-kernel.sh)
stock=$(stock_version)
make -s BUILD="$BUILD" lib tools examples
build_ko stock "/usr/src/linux-headers-$stock"
out=$BUILD/bench
rm -rf "$out"
mkdir -p "$out"

# The stock kernel's soft-RoCE modules and libibverbs' rxe provider.
mods=/lib/modules/$stock/kernel
set -- "$BUILD"/dp-bench
for m in crypto/crc32_generic net/ipv4/udp_tunnel net/ipv6/ip6_udp_tunnel \
	drivers/infiniband/core/ib_core drivers/infiniband/core/ib_uverbs \
	drivers/infiniband/sw/rxe/rdma_rxe; do
	set -- "$@" "$mods/$m.ko:/dmaplane/kmods/$(basename "$m").ko"
done
prov=$(ls /usr/lib/*/libibverbs/librxe-rdmav*.so 2>/dev/null | head -1)
[ -n "$prov" ] && set -- "$@" "$prov:$prov" /etc/libibverbs.d/rxe.driver:/etc/libibverbs.d/rxe.driver
extra_files="$*"
# shellcheck disable=SC2086
make_initramfs "$out/bench.cpio.gz" "$BUILD/ko-stock" $extra_files
tests/vm/run-vm.sh -k "/boot/vmlinuz-$stock" -i "$out/bench.cpio.gz" -j bench \
	-o "$out/vm" -t 1500 -m 4096
sed -n '/^DMAPLANE-BENCH-BEGIN/,/^DMAPLANE-BENCH-END/p' "$out/vm/results-0.log" |
	grep -v '^DMAPLANE-' | tee "$out/reg.txt"
grep -q '^DMAPLANE-GUEST-DONE rc=0$' "$out/vm/results-0.log"
