#!/bin/bash
# VM entry point of the testbed (testbed/vm/run.sh runs scripts with bash).
exec python3 "$(dirname "${BASH_SOURCE[0]}")/guest.py" "$@"
