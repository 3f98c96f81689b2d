#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The fabtests client/server pairs that jobs/fabric.sh (one VM) and
# jobs/fabric2.sh (two VMs) run with -p dmaplane, in one list.  The job
# defines pair NAME PORT COMMAND... and skip NAME WHY, and sets FT (the
# fabtests bin directory as seen in the chroot), H (the host's root), OOB
# (fabtests' -E out-of-band port), SIZES (-S) and WINDOW (-W).

FABTESTS_PAIRS="fi_rdm_tagged_pingpong fi_rdm_tagged_bw fi_rdm_tagged_peek
fi_recv_cancel fi_unexpected_msg fi_rdm fi_cq_data fi_rdm_pingpong
fi_msg_inject fi_rma_bw-write fi_rma_bw-read fi_rma_bw-writedata"

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
}
