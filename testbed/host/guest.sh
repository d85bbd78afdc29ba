#!/bin/bash
# VM entry point of `testbed/host/run.py --backend vm` (testbed/vm/run.sh
# runs scripts with bash): the plans in OUT/plans.json on the guest's kernel.
exec python3 "$(dirname "${BASH_SOURCE[0]}")/run.py" --guest "$1"
