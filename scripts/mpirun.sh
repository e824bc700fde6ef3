#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs an MPI program on this one machine as the tests do (scripts/test.sh's mpi stage,
# tests/consumer/run.sh):
#
#   scripts/mpirun.sh NP PROGRAM [ARGS...]
#
# MPIRUN names the launcher (default mpirun); FA_MPIRUN_ARGS adds options before PROGRAM. With
# Open MPI it adds:
#   --oversubscribe        the tests run up to 4 ranks on a 2-core machine; Open MPI refuses more
#                          ranks than cores without it (and then yields the CPU while it waits)
#   --allow-run-as-root    only as root (CI containers): Open MPI refuses root without it
#   OMPI_MCA_btl_vader_single_copy_mechanism=none
#                          shared-memory messages above the eager size use CMA
#                          (process_vm_readv) by default, which Docker's default seccomp profile
#                          denies without CAP_SYS_PTRACE: every large message then fails with "Read
#                          -1, expected N, errno = 1" (open-mpi/ompi#4948). Copying through the
#                          shared segment works everywhere. CMA works on this machine (root, full
#                          capabilities) and moves 2-4x the bandwidth, so a benchmark may set
#                          OMPI_MCA_btl_vader_single_copy_mechanism=cma, which this keeps.
#   OMPI_MCA_btl=self,vader
#                          one machine, so shared memory only: no TCP interface probing, no warning
#                          from openib on a host with InfiniBand adapters (a set value is kept).
# Other MPIs (MPICH's hydra) run NP ranks on any core count as they are: nothing is added.
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: scripts/mpirun.sh NP PROGRAM [ARGS...]" >&2
    exit 2
fi
np=$1
shift
launcher=${MPIRUN:-mpirun}
opts=(-np "$np")
if "$launcher" --version 2>&1 | grep -q 'Open MPI'; then
    opts+=(--oversubscribe)
    if [ "$(id -u)" -eq 0 ]; then opts+=(--allow-run-as-root); fi
    export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
    export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
fi
read -r -a extra <<<"${FA_MPIRUN_ARGS:-}"
exec "$launcher" "${opts[@]}" "${extra[@]}" "$@"
