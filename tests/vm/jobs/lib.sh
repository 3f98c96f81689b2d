# SPDX-License-Identifier: GPL-2.0
# Helpers for guest jobs.  Records understood by tests/vm/results.py:
#   DMAPLANE-CASE <name> PASS|FAIL|SKIP [reason]
#   DMAPLANE-BEGIN <kind> <name> ... DMAPLANE-END <kind> <name> rc=<n>
# where <kind> is kselftest (TAP inside), ktap (KUnit output inside) or
# kmemleak (the kmemleak report inside).

D=/dmaplane
fails=0

# cmdline NAME DEFAULT: the value of NAME=VALUE on the kernel command
# line (the last one given wins, as with module parameters), or DEFAULT.
cmdline() {
	val=$2
	for arg in $(cat /proc/cmdline); do
		case $arg in
		"$1"=*) val=${arg#*=} ;;
		esac
	done
	echo "$val"
}

case_result() {	# name rc [reason]
	if [ "$2" = 0 ]; then
		echo "DMAPLANE-CASE $1 PASS"
	else
		echo "DMAPLANE-CASE $1 FAIL ${3:-rc=$2}"
		fails=$((fails + 1))
	fi
}

check() {	# name command...
	name=$1
	shift
	"$@"
	case_result "$name" $?
}

kmemleak_reset() {
	[ -w /sys/kernel/debug/kmemleak ] || return 0
	# Forget everything allocated before the job: only leaks made by it
	# are reported at the end.
	echo scan >/sys/kernel/debug/kmemleak
	echo clear >/sys/kernel/debug/kmemleak
}

kmemleak_report() {
	if [ ! -w /sys/kernel/debug/kmemleak ]; then
		echo "DMAPLANE-CASE kmemleak SKIP kernel without kmemleak"
		return 0
	fi
	# An object must be seen unreferenced by two scans, the first one
	# at least 5 s after it was allocated.
	sleep 6
	echo scan >/sys/kernel/debug/kmemleak
	echo scan >/sys/kernel/debug/kmemleak
	echo "DMAPLANE-BEGIN kmemleak report"
	cat /sys/kernel/debug/kmemleak
	echo "DMAPLANE-END kmemleak report rc=0"
}

run_kselftest() {	# program
	name=$(basename "$1")
	echo "DMAPLANE-BEGIN kselftest $name"
	"$1"
	rc=$?
	echo "DMAPLANE-END kselftest $name rc=$rc"
	[ $rc = 0 ] || fails=$((fails + 1))
}

run_kunit() {	# module
	if [ ! -e "$1" ]; then
		echo "DMAPLANE-CASE kunit SKIP kernel without KUnit"
		return 0
	fi
	dmesg -c >/dev/null
	insmod "$1"
	rc=$?
	echo "DMAPLANE-BEGIN ktap $(basename "$1" .ko)"
	dmesg | sed 's/^\[[ 0-9.]*\] //'
	echo "DMAPLANE-END ktap $(basename "$1" .ko) rc=$rc"
	rmmod "$(basename "$1" .ko)"
}

# load_dmaplane: insmod dmaplane.ko, after the RDMA core modules when the
# kernel has them as modules (Debian's; the test kernel has them built in).
load_dmaplane() {
	for m in configfs ib_core ib_cm iw_cm rdma_cm; do
		[ -e $D/kmods/$m.ko ] && insmod $D/kmods/$m.ko
	done
	insmod $D/dmaplane.ko "$@"
}
