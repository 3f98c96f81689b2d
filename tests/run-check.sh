#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make check: the whole dmaplane test suite.
#
#  1. dependencies (scripts/deps.sh) and the two cached test kernels, from
#     Debian's linux-source-6.1 and linux-source-6.12
#  2. build: library, tools, tests; the module (with its feature probes)
#     and the KUnit module for both test kernels, the module for Debian's
#     stock 6.1 and 6.12 kernels (W=1, warnings are errors)
#  3. checkpatch --strict on kernel and uapi sources
#  4. host tests: the library without a module, install + pkg-config,
#     dmaplaned without a module, the dedup engine, evil_peer's --random
#     frame generator under ASan+UBSan (when librdmacm is there),
#     the documentation (scripts/check-docs.py, with the 6.12 test
#     kernel's kernel-doc), dkms build for both stock kernels
#  5. test kernel VMs, 6.1 and 6.12 (KASAN, lockdep, kmemleak): KUnit +
#     kselftest suite
#  6. stock kernel VMs (linux-image-amd64 and linux-image-6.12-amd64): the
#     kselftest suite; make bench's job as a smoke run on 6.1 (every
#     dp-bench mode and peer with tiny sizes, tests/run-bench.sh smoke)
#  6b. fault injection (every allocation of every ioctl path failed once),
#     60 kill rounds and 40,000 fuzzed ioctls, on the 6.1 test kernel
#  7. two VMs on one link (a UNIX socket between their QEMUs): link,
#     soft-RoCE, module on both nodes, remote_test across them, peer
#     unload and rxe removal under load;
#     then 60 kill rounds of a group spread over the two nodes
#  8. the libfabric provider (when libfabric-dev is installed): its host
#     test, then fi_pingpong, fabtests and Open MPI in a 6.1 test kernel VM
#     (tests/run-fabric.sh), and fi_pingpong and fabtests between two VMs
#     (tests/run-fabric2.sh)
#
# The VM runs (5-8) go in two lanes side by side (see VM_JOBS below).
#
# Every test prints PASS/FAIL/SKIP; the last line is "N passed, N failed".
# Every step prints its time.  Exit status 1 when anything failed.
# Logs: build/check/.
#
# DMAPLANE_CHECK=quick skips steps 6 and 7 and the 6.12 test kernel VM
# (for development; CI runs all).

set -u
cd "$(dirname "$0")/.."
. tests/vm/common.sh

out=$BUILD/check
results=$out/results.txt
rm -rf "$out"
mkdir -p "$out"
: >"$results"

record() {	# PASS|FAIL name [why]
	if [ -n "${3:-}" ]; then
		printf '%s %s: %s\n' "$1" "$2" "$3" | tee -a "$results"
	else
		printf '%s %s\n' "$1" "$2" | tee -a "$results"
	fi
}

step() {	# name command...: one test that is the command's success
	name=$1
	shift
	mkdir -p "$(dirname "$out/$name.log")"
	if "$@" >"$out/$name.log" 2>&1; then
		record PASS "$name"
	else
		record FAIL "$name" "$(tail -30 "$out/$name.log")"
	fi
}

judge() {	# results.py arguments: append its verdicts
	python3 tests/vm/results.py --ksrc "${JUDGE_KSRC:-$KSRC}" "$@" >>"$results.tmp" 2>&1
	cat "$results.tmp"
	cat "$results.tmp" >>"$results"
	rm -f "$results.tmp"
}

t0=$(date +%s)
tstep=
section() {	# title: print the time the previous section took, start the next
	now=$(date +%s)
	[ -z "$tstep" ] || echo "   ($((now - tstep)) s)"
	tstep=$now
	echo "== $*"
}

finish() {
	section "done in $(($(date +%s) - t0)) s"
	pass=$(grep -c '^PASS ' "$results")
	fail=$(grep -c '^FAIL ' "$results")
	skip=$(grep -c '^SKIP ' "$results")
	if [ "$fail" != 0 ]; then
		echo
		echo "Failures:"
		grep '^FAIL ' "$results" | cut -c1-200
	fi
	echo
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" = 0 ]
	exit $?
}


section "dependencies"
if ! scripts/deps.sh all; then
	record FAIL dependencies "scripts/deps.sh failed"
	finish
fi
section "test kernels (cached after the first build, ~10 and ~15 min)"
if ! KSRC=$(tests/vm/build-kernel.sh 6.1); then
	record FAIL test-kernel-6.1 "tests/vm/build-kernel.sh 6.1 failed"
	finish
fi
if ! KSRC612=$(tests/vm/build-kernel.sh 6.12); then
	record FAIL test-kernel-6.12 "tests/vm/build-kernel.sh 6.12 failed"
	finish
fi
stock=$(stock_version)
stock612=$(stock_version linux-image-6.12-amd64)
KSFT=$KSRC/tools/testing/selftests

section "build (W=1 -Werror against every kernel; two builds at a time)"
# The newest kernels Debian has (unstable's linux-source, and
# experimental's release candidate; no Debian 12 package): compiled
# against a modules_prepare'd tree, not run; a skip when the archive cannot
# be reached or no longer carries one.
build_ko_compile_only() (
	export KBUILD_MODPOST_WARN=1	# no Module.symvers: symbols unresolved
	build_ko "$@"
)
newest="7.2 7.3"
# Each build is one make without -j, in its own directory: two of them
# side by side keep both cores busy.
build_other_kernels() {
	step build/module-testkernel-6.12 build_ko test612 "$KSRC612"
	step build/module-stock-$stock build_ko stock "/usr/src/linux-headers-$stock"
	step build/module-stock-$stock612 build_ko stock612 "/usr/src/linux-headers-$stock612"
	for v in $newest; do
		ksrc=$(tests/vm/prepare-kernel.sh "$v" 2>"$out/prepare-$v.log")
		case $? in
		0) step build/module-$v-compile-only build_ko_compile_only "new$v" "$ksrc" ;;
		3) record SKIP build/module-$v-compile-only "$(tail -1 "$out/prepare-$v.log")" ;;
		*) record FAIL build/module-$v-compile-only "$(tail -20 "$out/prepare-$v.log")" ;;
		esac
	done
}
build_other_kernels &
build_pid=$!
step build/user make -s BUILD="$BUILD" KSFT_DIR="$KSFT" lib tools examples tests \
	daemon daemon-asan
step build/module-testkernel-6.1 build_ko test "$KSRC"
wait "$build_pid"
for k in test test612; do
	[ -e "$BUILD/ko-$k/dmaplane_kunit.ko" ]
	[ $? = 0 ] && record PASS build/kunit-module-$k || record FAIL build/kunit-module-$k "not built"
done

section "checkpatch --strict"
for f in kmod/*.[ch] kunit-tests/*.c uapi/linux/*.h compat/*.c; do
	step "checkpatch/$f" perl "$KSRC612/scripts/checkpatch.pl" --no-tree --strict \
		--show-types -f "$f"
done

section "host tests (and beside them: dkms build for $stock and $stock612)"
sh tests/host/dkms_test.sh "$stock" "$stock612" >"$out/host-dkms.log" 2>&1 &
dkms_pid=$!
# The kselftest programs of tests/host/, the dedup engine's test and
# evil_frames_test (built only with librdmacm: evil_peer's frames for
# seeds 1..2000, ASan+UBSan), each when built.
for t in "$BUILD"/tests/host/*_test; do
	[ -x "$t" ] || continue
	"$t" >"$out/host-$(basename "$t").log" 2>&1
	judge --label "host/$(basename "$t")" --tap "$out/host-$(basename "$t").log" --rc $?
done
sh tests/host/install_test.sh "$BUILD" >"$out/host-install.log" 2>&1
judge --label host/install --tap "$out/host-install.log" --rc $?
sh tests/host/kvstore_test.sh "$BUILD" >"$out/host-kvstore.log" 2>&1
judge --label host/kvstore --tap "$out/host-kvstore.log" --rc $?
# dmaplaned without the module (its VM job, tests/run-daemon.sh, runs in
# make soak)
sh tests/host/dmaplaned_test.sh "$BUILD" >"$out/host-dmaplaned.log" 2>&1
judge --label host/dmaplaned --tap "$out/host-dmaplaned.log" --rc $?
step host/docs env KERNELDOC="$KSRC612/scripts/kernel-doc" python3 scripts/check-docs.py
wait "$dkms_pid"
judge --label host/dkms --tap "$out/host-dkms.log" --rc $?

run_vm() {	# label kernel kodir job nodes timeout [kernel-args]
	label=$1
	if [ ! -e "$3/dmaplane.ko" ]; then
		record FAIL "$label" "no module built in $3"
		return
	fi
	if ! make_initramfs "$out/$label.cpio.gz" "$3" >"$out/$label-initramfs.log" 2>&1; then
		record FAIL "$label/initramfs" "$(tail -20 "$out/$label-initramfs.log")"
		return
	fi
	tests/vm/run-vm.sh -k "$2" -i "$out/$label.cpio.gz" -j "$4" -n "$5" \
		-t "$6" -o "$out/$label" -a "${7:-}"
	judge --label "$label" "$out/$label" "$5"
}

if [ "${DMAPLANE_CHECK:-}" = quick ]; then
	section "test kernel 6.1 VM: KUnit and kselftest suite"
	run_vm testkernel "$KSRC/arch/x86/boot/bzImage" "$BUILD/ko-test" suite 1 1200
	echo "== DMAPLANE_CHECK=quick: 6.12 test kernel, stock kernel and two-VM runs skipped"
	finish
fi

# The VM jobs run in two lanes side by side (a guest under TCG keeps about
# one of its two vCPUs busy, so two lanes keep the host's two cores busy).
# Each lane takes the next job of VM_JOBS (longest first) that no lane has
# taken, so the lanes end at about the same time whatever this machine's
# speed; a job waits while another job holding one of its tags runs: the
# two-VM jobs (2vm) never run beside each other (four busy vCPUs on two
# cores starved a guest's RCU kthread for 23 s), nor do the two libfabric
# jobs (fab: both run tests/run-fabric.sh's build steps).  Lane b's
# output is printed after lane a's, each job with its time.
# On 7 December (5592e4a, before the scheduler, on a machine about twice
# as slow as the ones before) the 6.1 suite took 855 s, the 6.12 suite
# 781, faults 924, killloop 503 (its kill rounds 244 of them), fuzz about
# 1,170, killloop2 776 (kill rounds 269): booting and kmemleak's scans
# (a minute and more each) were most of a VM job, and the whole run did
# not end within 90 minutes.
VM_JOBS="twonode fabric faults testkernel testkernel-6.12 fabric2 fuzz killloop2
benchsmoke killloop stock stock-6.12"

job_tags() {	# job: its tags
	case $1 in
	twonode|killloop2) echo 2vm ;;
	fabric2) echo 2vm fab ;;
	fabric) echo fab ;;
	esac
}

sched=$out/sched
mkdir -p "$sched"

# claim: print the next job this lane may start (status 0), or status 1
# when every job is taken, 2 when the ones left wait for a tag
claim() (
	exec 9>"$sched/lock"
	flock 9
	left=1
	for j in $VM_JOBS; do
		[ ! -e "$sched/job-$j" ] || continue
		left=2
		free=1
		for t in $(job_tags "$j"); do
			[ ! -e "$sched/tag-$t" ] || free=
		done
		[ -n "$free" ] || continue
		: >"$sched/job-$j"
		for t in $(job_tags "$j"); do
			: >"$sched/tag-$t"
		done
		echo "$j"
		exit 0
	done
	exit $left
)

release() (	# job: its tags are free again
	exec 9>"$sched/lock"
	flock 9
	for t in $(job_tags "$1"); do
		rm -f "$sched/tag-$t"
	done
)

# The test kernels' suite takes 500-850 s beside the other lane; 1,200 s
# leaves room for a loaded host (a 6.12 suite ran out of 900 s in its
# final kmemleak scan with two more VMs on the host).
run_job() {	# job
	case $1 in
	testkernel)
		section "$lane: test kernel 6.1 VM: KUnit and kselftest suite"
		run_vm testkernel "$KSRC/arch/x86/boot/bzImage" "$BUILD/ko-test" suite 1 1200 ;;
	testkernel-6.12)
		section "$lane: test kernel 6.12 VM: KUnit and kselftest suite"
		JUDGE_KSRC=$KSRC612 run_vm testkernel-6.12 "$KSRC612/arch/x86/boot/bzImage" \
			"$BUILD/ko-test612" suite 1 1200 ;;
	faults)
		section "$lane: test kernel 6.1 VM: fault injection (fail-nth sweep, failslab, fail_page_alloc)"
		run_vm faults "$KSRC/arch/x86/boot/bzImage" "$BUILD/ko-test" faults 1 2400 ;;
	killloop)
		section "$lane: test kernel 6.1 VM: kill loop (60 rounds)"
		run_vm killloop "$KSRC/arch/x86/boot/bzImage" "$BUILD/ko-test" killloop 1 1800 \
			"dmaplane.kill_rounds=60" ;;
	fuzz)
		section "$lane: test kernel 6.1 VM: ioctl fuzzer (40,000 calls)"
		run_vm fuzz "$KSRC/arch/x86/boot/bzImage" "$BUILD/ko-test" fuzz 1 2400 \
			"dmaplane.fuzz_calls=40000" ;;
	stock)
		section "$lane: stock kernel $stock VM: kselftest suite"
		run_vm stock "/boot/vmlinuz-$stock" "$BUILD/ko-stock" suite 1 600 ;;
	stock-6.12)
		section "$lane: stock kernel $stock612 VM: kselftest suite"
		run_vm stock-6.12 "/boot/vmlinuz-$stock612" "$BUILD/ko-stock612" suite 1 600 ;;
	benchsmoke)
		section "$lane: stock kernel $stock VM: make bench's job, smoke run (every dp-bench mode and peer, tiny sizes)"
		# tests/run-bench.sh smoke: a case per dp-bench mode (non-zero
		# exit or an "error"/"n/a" dmaplane cell fails it) and per peer
		# (ucx_perftest, NetPIPE over Open MPI's vader, UCX and the
		# provider; skipped when not installed, scripts/deps.sh bench).
		rm -rf "$BUILD/bench-smoke/vm"
		if ! DMAPLANE_BENCH_KO=$BUILD/ko-stock tests/run-bench.sh smoke >"$out/benchsmoke.log" 2>&1 &&
			[ ! -e "$BUILD/bench-smoke/vm/results-0.log" ]; then
			record FAIL benchsmoke "no VM run: $(tail -20 "$out/benchsmoke.log")"
		else
			judge --label benchsmoke "$BUILD/bench-smoke/vm" 1
		fi ;;
	twonode)
		section "$lane: two VMs: network, soft-RoCE, remote_test across the nodes, peer failures"
		# 250 random frames from the malicious peer (the job's default
		# 500, make soak's 5,000): 2 or 3 a second on a loaded host.
		run_vm twonode "$KSRC/arch/x86/boot/bzImage" "$BUILD/ko-test" twonode 2 3000 \
			"dmaplane.evil_count=250" ;;
	killloop2)
		section "$lane: two VMs: kill loop across the nodes (60 rounds)"
		run_vm killloop2 "$KSRC/arch/x86/boot/bzImage" "$BUILD/ko-test" killloop2 2 1800 \
			"dmaplane.kill_rounds=60" ;;
	fabric)
		pkg-config --exists libfabric && fabric_vm ;;
	fabric2)
		pkg-config --exists libfabric && fabric2_vms ;;
	esac
}

lane_run() {	# name: run jobs until none is left
	lane=$1
	waiting=
	while :; do
		j=$(claim)
		case $? in
		0)
			waiting=
			run_job "$j"
			release "$j" ;;
		1)
			break ;;
		*)
			[ -n "$waiting" ] ||
				section "$lane: waiting (the jobs left wait for one that runs)"
			waiting=1
			sleep 10 ;;
		esac
	done
	section "$lane: done"
}

fabric_vm() {
	section "$lane: libfabric provider: fi_pingpong, fabtests, Open MPI (6.1 VM)"
	# Every check (fi_getinfo_test's subtests that ask for what dmaplane
	# does not do are SKIP lines: tests/vm/jobs/fabric.sh).
	checks=fi_getinfo_test,fi_pingpong,fi_pingpong-8,fi_rdm_tagged_pingpong,fi_rdm_tagged_bw
	checks=$checks,fi_rdm_tagged_peek
	checks=$checks,fi_recv_cancel,fi_unexpected_msg,fi_rdm,fi_rdm_pingpong
	checks=$checks,fi_msg_inject,fi_rma_bw-write,fi_rma_bw-read,fi_rma_bw-writedata
	checks=$checks,fi_cq_test,fi_mr_test,fi_dom_test,fi_eq_test,fi_cq_data
	# runfabtests.sh's cases beyond those (tests/vm/jobs/fabtests.sh), a
	# few (25-35 s each under TCG): AV insertion during traffic, the
	# counter unit test and FI_MULTI_RECV (packing 4-byte messages into
	# two halves of a buffer, reposted as they fill, every byte checked);
	# make soak runs the whole list (FI_DELIVERY_COMPLETE, ten clients,
	# atomics "not offered" ...).
	checks=$checks,fi_av_xfer,fi_cntr_test,fi_multi_recv.v-M-S4,mrecv_test
	# Open MPI over the provider (fabric/tests/mpi_p2p.c; it skips without
	# mpirun/mpicc), np 4: five minutes of guest time under TCG, mostly
	# mpirun's start.  The np 2 mpi_ping_pong (which mpi_p2p covers),
	# mpi_coll (five minutes more) and mpi_osc (one-sided over osc/pt2pt)
	# run in make soak, in one VM and across two; FABRIC_NO_MPI=1 leaves
	# mpi_p2p out.  MPICH over the provider too (mpi_p2p, np 4, ~2 min),
	# when fabric/build-mpich.sh's build is cached (make soak builds it,
	# ~40 min once): otherwise the check says SKIP.
	[ -n "${FABRIC_NO_MPI:-}" ] ||
		checks=$checks,openmpi-p2p,mpich-p2p
	# kmemleak=off: the provider's kernel paths are the suite's, whose
	# jobs judge kmemleak; its closing scans took four minutes here, and
	# it tracks every allocation of mpirun's start (make soak runs this
	# job with kmemleak).
	FABRIC_MPICH=cached FABRIC_RUN=check FABRIC_VM_TIMEOUT=4800 tests/run-fabric.sh 6.1 \
		"dmaplane.fabric_only=$checks kmemleak=off" >"$out/fabric.log" 2>&1
	grep -E '^(PASS|FAIL|SKIP) ' "$out/fabric.log" | tee -a "$results"
	grep -qE '^(PASS|FAIL) ' "$out/fabric.log" ||
		record FAIL fabric "no results: $(tail -5 "$out/fabric.log")"
}

fabric2_vms() {
	section "$lane: libfabric provider across two VMs: fi_pingpong and fabtests (6.1)"
	# fabtests pairs between the nodes (servers on node 1, clients on
	# node 0; 60-120 s each under TCG): a few of the one-VM job's, the
	# ones whose traffic differs across nodes (the tag matching, the
	# unexpected path, rendezvous and RMA over the RDMA transport); make
	# soak runs every pair and Open MPI and MPICH across the nodes.
	checks=fi_pingpong,fi_rdm_tagged_pingpong,fi_rdm_tagged_bw,fi_unexpected_msg
	checks=$checks,fi_rma_bw-read
	FABRIC_RUN=check FABRIC_VM_TIMEOUT=2400 tests/run-fabric2.sh 6.1 \
		"dmaplane.fabric_only=$checks kmemleak=off" >"$out/fabric2.log" 2>&1
	grep -E '^(PASS|FAIL|SKIP) ' "$out/fabric2.log" | tee -a "$results"
	grep -qE '^(PASS|FAIL) ' "$out/fabric2.log" ||
		record FAIL fabric2 "no results: $(tail -5 "$out/fabric2.log")"
}

if pkg-config --exists libfabric; then
	section "libfabric provider: build and host tests"
	step build/fabric make -s BUILD="$BUILD" KSFT_DIR="$KSFT" fabric fabric-tests
	for t in "$BUILD"/fabric/tests/*_test; do
		[ -x "$t" ] || continue
		# it needs the module: the fabric VM job runs it (check mrecv_test)
		[ "$(basename "$t")" != mrecv_test ] || continue
		"$t" >"$out/host-fabric-$(basename "$t").log" 2>&1
		judge --label "host/fabric-$(basename "$t")" \
			--tap "$out/host-fabric-$(basename "$t").log" --rc $?
	done
fi

section "VMs in two lanes (lane b's log follows lane a's)"
(
	results=$out/results-b.txt
	: >"$results"
	tstep=
	lane_run "lane b"
) >"$out/lane-b.log" 2>&1 &
lane_b_pid=$!
lane_run "lane a"
wait "$lane_b_pid"
cat "$out/lane-b.log"
cat "$out/results-b.txt" >>"$results"
finish
