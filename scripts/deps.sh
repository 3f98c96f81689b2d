#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Install the Debian packages dmaplane's build, VM harness and tests need.
# Idempotent: does nothing when every package is already installed.
# Usage: scripts/deps.sh [build|vm|all|bench]   (default: all)
# build includes libzmq3-dev, for dp-kvstore's ZeroMQ transport, and
# libmicrohttpd-dev, libjansson-dev and libcurl4-openssl-dev (its mesh), for
# dmaplaned (the arena service);
# libxxhash-dev and libb2-dev, for its dedup engine; liburing-dev, for the
# io_uring submission tests and dp-bench's io_uring columns.
# vm/all include libfabric-dev and -bin and the autotools, for the
# libfabric provider, fi_pingpong and fabtests (built from
# ../shared/external) in make check, and Open MPI (mpirun, mpicc) for the
# MPI programs make check runs over the provider (fabric/tests/mpi_*.c).
# bench: all, plus the peers make bench and make bench2 run beside
# dp-bench (UCX's ucx_perftest, Open MPI and NetPIPE; across two VMs also
# perftest's ib_*_lat/bw, libfabric's fi_pingpong, iperf3 and qperf, with
# rdma-core's verbs and rdma_cm libraries and the rxe provider) and
# linux-perf (DMAPLANE_BENCH_PROFILE=); not part of all, so make check
# never installs them.

set -e

build_pkgs="gcc make pkg-config libnl-3-dev libnl-genl-3-dev python3-docutils groff-base
	linux-headers-amd64 kmod libzmq3-dev libmicrohttpd-dev libjansson-dev libcurl4-openssl-dev
	libxxhash-dev libb2-dev liburing-dev"
vm_pkgs="qemu-system-x86 busybox-static cpio linux-source-6.1 bc bison flex
	libelf-dev libssl-dev xz-utils python3 perl linux-image-amd64
	linux-source-6.12 linux-image-6.12-amd64 linux-headers-6.12-amd64 dkms
	iproute2 procps binutils libibverbs-dev librdmacm-dev ibverbs-providers
	libfabric-dev libfabric-bin autoconf automake libtool openmpi-bin
	libopenmpi-dev"
bench_pkgs="ucx-utils openmpi-bin netpipe-openmpi perftest libfabric-bin iperf3
	qperf rdma-core ibverbs-providers librdmacm1 python3-matplotlib rsync linux-perf"

case "${1:-all}" in
build)	pkgs=$build_pkgs ;;
vm|all)	pkgs="$build_pkgs $vm_pkgs" ;;
bench)	pkgs="$build_pkgs $vm_pkgs $bench_pkgs" ;;
*)	echo "usage: $0 [build|vm|all|bench]" >&2; exit 2 ;;
esac

missing=
for p in $pkgs; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" != 0 ]; then
	echo "dmaplane: missing packages:$missing" >&2
	echo "dmaplane: run as root: apt-get update && $cmd" >&2
	exit 1
fi
echo "dmaplane: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null
