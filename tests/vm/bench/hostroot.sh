# SPDX-License-Identifier: GPL-2.0
# Sourced by the bench guest scripts: mount the host's root, shared
# read-only over virtio-9p (run-vm.sh -R), on $H with the guest's own
# /proc, /sys, /dev and tmpfs /dev/shm, /tmp, /run, so that host programs
# run in a chroot into it (in_host).  hostroot_mount returns 1 without -R.

H=/host

hostroot_mount() {
	for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev \
		virtio_pci netfs fscache 9pnet 9pnet_virtio 9p; do
		[ -e /dmaplane/kmods/$m.ko ] && insmod /dmaplane/kmods/$m.ko 2>/dev/null
	done
	mkdir -p $H
	# cache=loose: the guest keeps what it read (pages, inodes, names).
	# Without it (cache=none) every exec reads each library again through
	# 9p: under TCG fi_info took 7-9 s and "mpirun -np 4 /bin/true" 32-35
	# s, with it 1.6-2.6 s and 10-12 s.  Nothing may change under the
	# share while a VM runs anyway (a program rebuilt under a running one).
	# It needs run-vm.sh -R's multidevs=remap: a guest that caches inodes
	# takes two host files of the same inode number for one.
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose hostroot $H ||
		return 1
	mount -t proc proc $H/proc
	mount -t sysfs sysfs $H/sys
	mount -o bind /dev $H/dev
	mount -t tmpfs tmpfs $H/dev/shm
	mount -t tmpfs tmpfs $H/tmp
	mount -t tmpfs tmpfs $H/run
	# Open MPI refuses the guest's default node name "(none)".
	hostname dmaplane-bench
}

# wait_listen PORT [PID]: until a TCP socket listens on PORT (60 s at most;
# false at once when process PID has exited).
wait_listen() {
	hex=$(printf '%04X' "$1")
	for i in $(seq 120); do
		grep -qE ":$hex [0-9A-F]+:0000 0A" /proc/net/tcp /proc/net/tcp6 \
			2>/dev/null && return 0
		# a server (PID, if given) that exited will not listen
		[ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null && return 1
		sleep 0.5
	done
	return 1
}

in_host() {	# command line, run in the chroot with a clean environment
	chroot $H /usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/tmp \
		TMPDIR=/tmp "$@"
}

# mpi_rsh_agent PORT: write $H/tmp/rsh-agent, Open MPI's plm_rsh_agent for
# VMs without ssh: "rsh-agent HOST COMMAND..." hands the command line
# (orted's) to a listener on HOST (busybox nc on PORT) that runs it in the
# chroot, as sshd would.  Needed on every node: orted checks that the
# agent's path exists.
mpi_rsh_agent() {
	cat >$H/tmp/rsh-agent <<-EOF
	#!/bin/sh
	host=\$1
	shift
	for i in \$(seq 30); do
		printf '%s\\n' "\$*" | busybox nc -w 5 "\$host" $1 && exit 0
		sleep 1
	done
	exit 1
	EOF
	chmod 0755 $H/tmp/rsh-agent
}

# mpi_providers NP LOG: true when LOG (mpirun's output with --mca
# mtl_base_verbose 10) says that all NP ranks' ofi MTL chose the dmaplane
# provider and none chose another ("mtl:ofi:provider: NAME"; Open MPI
# 4.1.4 prints the domain's name, dmaplane's is "dmaplane"); else false,
# with what they chose on stdout.
mpi_providers() {
	grep -o 'mtl:ofi:provider: [^ ]*' "$2" >/tmp/prov.$$
	if [ "$(grep -cx 'mtl:ofi:provider: dmaplane' /tmp/prov.$$)" = "$1" ] &&
		! grep -qvx 'mtl:ofi:provider: dmaplane' /tmp/prov.$$; then
		return 0
	fi
	echo "providers: $(sort /tmp/prov.$$ | uniq -c | tr -s ' \n' '  '), want $1 x dmaplane"
	return 1
}

# mpich_summary LOG: true when LOG (mpiexec's output with
# MPIR_CVAR_DEBUG_SUMMARY=1) says that rank 0's MPICH chose the dmaplane
# provider with its active messages on (they need FI_MULTI_RECV); else
# false, with what is missing on stdout.
mpich_summary() {
	ok=0
	grep -q "^libfabric provider: dmaplane" "$1" ||
		{ printf '%s' "rank 0 did not say 'libfabric provider: dmaplane'; "; ok=1; }
	grep -q "^MPIDI_OFI_ENABLE_AM: 1" "$1" ||
		{ printf '%s' "active messages off; "; ok=1; }
	return $ok
}

# mpi_run LAUNCHER...: an MPI launcher of the job's $name and $prog, run
# on the host by the job's fab() and bounded by $MPI_TMO; its output in
# /tmp/mpi.$$ and printed; sets rc (its exit status, or 1 when rank 0 did
# not print "$prog: ok"), why and secs for the job's mpi_result.
mpi_run() {
	t0=$(date +%s)
	tmo=$MPI_TMO
	fab "$@" >/tmp/mpi.$$ 2>&1
	rc=$?
	tmo=
	secs=$(($(date +%s) - t0))
	sed 's/^/#   /' /tmp/mpi.$$
	why=
	grep -q "^$prog: ok" /tmp/mpi.$$ || { rc=1; why="no '$prog: ok'; "; }
}
