#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The libfabric provider across two VMs: tests/run-fabric.sh's build, then
# tests/vm/jobs/fabric2.sh on two VMs (node 1 servers, node 0 clients).
#
# Usage: tests/run-fabric2.sh [KVER [KERNEL-ARGS]]   (as tests/run-fabric.sh)
FABRIC_NODES=2 exec "$(dirname "$0")/run-fabric.sh" "$@"
