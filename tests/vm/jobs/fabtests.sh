#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The fabtests client/server pairs that jobs/fabric.sh (one VM) and
# jobs/fabric2.sh (two VMs) run with -p dmaplane, in one list.  The job
# defines pair NAME PORT COMMAND... and skip NAME WHY, and sets FT (the
# fabtests bin directory as seen in the chroot), H (the host's root), OOB
# (fabtests' -E out-of-band port), SIZES (-S) and WINDOW (-W).

FABTESTS_PAIRS="fi_rdm_tagged_pingpong fi_rdm_tagged_bw fi_rdm_tagged_peek
fi_recv_cancel fi_unexpected_msg fi_rdm fi_cq_data fi_rdm_pingpong
fi_msg_inject fi_rma_bw-write fi_rma_bw-read fi_rma_bw-writedata
fi_multi_recv.v"

fabtests_pairs() {
	if [ ! -x "$H$FT/fi_rdm_tagged_pingpong" ]; then
		for t in $FABTESTS_PAIRS; do
			skip "$t" "no fabtests in $FT (fabric/build-fabtests.sh)"
		done
		return 0
	fi
	pair fi_rdm_tagged_pingpong $OOB $FT/fi_rdm_tagged_pingpong -p dmaplane -E -I 10 -S $SIZES
	pair fi_rdm_tagged_bw $OOB $FT/fi_rdm_tagged_bw -p dmaplane -E -I 5 -W $WINDOW -S $SIZES
	pair fi_rdm_tagged_peek $OOB $FT/fi_rdm_tagged_peek -p dmaplane -E
	pair fi_recv_cancel $OOB $FT/fi_recv_cancel -p dmaplane -e rdm -E
	pair fi_unexpected_msg $OOB $FT/fi_unexpected_msg -p dmaplane -e rdm -E -I 10 -S 4096
	pair fi_rdm $OOB $FT/fi_rdm -p dmaplane -E
	# fi_senddata: 8 bytes of remote CQ data in the receiver's completion.
	pair fi_cq_data $OOB $FT/fi_cq_data -p dmaplane -e rdm -E
	pair fi_rdm_pingpong $OOB $FT/fi_rdm_pingpong -p dmaplane -E -I 10 -S $SIZES
	pair fi_msg_inject $OOB $FT/fi_msg_inject -p dmaplane -e rdm -E -S 512
	pair fi_rma_bw-write $OOB $FT/fi_rma_bw -p dmaplane -e rdm -E -o write \
		-I 5 -W $WINDOW -S $SIZES
	pair fi_rma_bw-read $OOB $FT/fi_rma_bw -p dmaplane -e rdm -E -o read \
		-I 5 -W $WINDOW -S $SIZES
	# fi_writedata: the target's CQ gets the data (DMAPLANE_CAP_PUT_DATA).
	pair fi_rma_bw-writedata $OOB $FT/fi_rma_bw -p dmaplane -e rdm -E -o writedata \
		-I 5 -W $WINDOW -S $SIZES
	# FI_MULTI_RECV: two halves of a 128 KiB buffer, 64 messages each,
	# filled in order and reposted; every byte checked (-v).
	pair fi_multi_recv.v $OOB $FT/fi_multi_recv -p dmaplane -e rdm -E -v -I 200 -S 1024
}

# runfabtests.sh's functional, short and standard cases for an RDM
# endpoint that FABTESTS_PAIRS does not already run, as NAME|ARGUMENTS
# (the program is the name up to the first '.'), each with -p dmaplane -E.
# fi_rma_bw -U runs with -W 16: without -S a process registers its
# largest size (8 MiB) times the window twice, with the default window of
# 64 1 GiB, and two such processes exceed the module's cap on pinned
# memory (max_pinned_mb, by default half of the 3 GiB VM's RAM): the
# second fi_mr_reg() gets -ENOMEM, as it should.
# Not here: fi_poll (1.17's poll.c never opens the -E socket, so with
# addresses that are not host:port it cannot exchange them: both sides
# exit 9, EBADF; fabric/tests/poll_test.c tests the poll sets instead),
# the MSG and DGRAM endpoint cases, and fi_av_test (see fabric.sh).
FABTESTS_RUNFABTESTS="
fi_av_xfer|-e rdm
fi_rdm.U|-U
fi_rdm_rma_event|
fi_rdm_rma_trigger|
fi_shared_ctx|
fi_shared_ctx.no-tx|--no-tx-shared-ctx
fi_shared_ctx.no-rx|--no-rx-shared-ctx
fi_scalable_ep|
fi_rdm_shared_av|
fi_multi_mr|-e rdm -V
fi_multi_ep|-e rdm -v
fi_recv_cancel.V|-e rdm -V
fi_msg_inject.inject|-A inject -v
fi_msg_inject.N-inject|-N -A inject -v
fi_msg_inject.inj_complete|-A inj_complete -v
fi_msg_inject.N-inj_complete|-N -A inj_complete -v
fi_bw|-e rdm -v -T 1
fi_bw.U|-e rdm -v -T 1 -U
fi_rdm_multi_client|-C 10 -I 5
fi_rdm_multi_client.U|-C 10 -I 5 -U
fi_rma_bw.write-U|-e rdm -o write -I 5 -U -W 16
fi_rma_bw.read-U|-e rdm -o read -I 5 -U -W 16
fi_rma_bw.writedata-U|-e rdm -o writedata -I 5 -U -W 16
fi_rdm_atomic|-I 5 -o all
fi_rdm_cntr_pingpong|-I 5
fi_multi_recv|-e rdm -I 5
fi_multi_recv.v-M-S4|-e rdm -v -M -I 300 -S 4
fi_rdm_pingpong.U|-I 5 -U
fi_rdm_pingpong.v|-I 5 -v
fi_rdm_pingpong.v-U|-I 5 -v -U
fi_rdm_pingpong.k|-I 5 -k
fi_rdm_tagged_pingpong.U|-I 5 -U
fi_rdm_tagged_pingpong.v|-I 5 -v
fi_rdm_tagged_pingpong.v-U|-I 5 -v -U
fi_rdm_tagged_pingpong.k|-I 5 -k
fi_rdm_tagged_bw.U|-I 5 -U
fi_rdm_tagged_bw.v|-I 5 -v
fi_rdm_tagged_bw.v-U|-I 5 -v -U
fi_rdm_tagged_bw.k|-I 5 -k
"

# The cases for what the provider does not offer (fabric/README.md):
# FI_RMA_EVENT, triggered operations, shared and scalable contexts, named
# AVs, RMA without FI_MR_ENDPOINT (fi_multi_mr), atomics, FI_MSG_PREFIX
# (-k).
FABTESTS_NOTRUN="fi_rdm_rma_event fi_rdm_rma_trigger fi_shared_ctx
fi_shared_ctx.no-tx fi_shared_ctx.no-rx fi_scalable_ep fi_rdm_shared_av
fi_multi_mr fi_rdm_atomic fi_rdm_pingpong.k
fi_rdm_tagged_pingpong.k fi_rdm_tagged_bw.k"

# notrun NAME SERVER-RC CLIENT-RC: runfabtests.sh's "notrun", both sides
# exiting FI_ENODATA (61: fi_getinfo found nothing for the hints) or
# FI_ENOSYS (38), is a SKIP for the cases FABTESTS_NOTRUN names and a FAIL
# for any other.  True when it printed the case's verdict.
notrun() {
	[ "$2" = "$3" ] && { [ "$2" = 61 ] || [ "$2" = 38 ]; } || return 1
	# shellcheck disable=SC2086 # one line of names
	case " $(echo $FABTESTS_NOTRUN) " in
	*" $1 "*)
		skip "$1" "not offered: both sides exit $2 (fabric/README.md)" ;;
	*)
		case_result "$1" 1 "notrun: both sides exit $2, and dmaplane offers this" ;;
	esac
	return 0
}

# fabtests_names: the case names of FABTESTS_RUNFABTESTS, comma-separated
# (for dmaplane.fabric_only=)
fabtests_names() {
	echo "$FABTESTS_RUNFABTESTS" | sed -n 's/|.*//p' | tr '\n' ,
}

fabtests_runfabtests() {
	saved_ifs=$IFS
	IFS='
'
	set -f
	for line in $FABTESTS_RUNFABTESTS; do
		IFS=$saved_ifs
		name=${line%%|*}
		args=${line#*|}
		prog=${name%%.*}
		if [ ! -x "$H$FT/$prog" ]; then
			skip "$name" "no $prog in $FT"
			continue
		fi
		# shellcheck disable=SC2086 # the arguments are words
		pair "$name" $OOB $FT/$prog -p dmaplane -E $args
	done
	IFS=$saved_ifs
	set +f
}
