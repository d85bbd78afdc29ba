#!/usr/bin/env bash
# Builds the Uno paper's public htsim artifact (github.com/spcl/Uno_SC25),
# the judge bench/uno-multipath.py runs beside xdcc-sim:
#
#   bench/build-uno-artifact.sh SRC DEST
#
# SRC: a clone of spcl/Uno_SC25 (a work tree, or a bare repository: its
# HEAD is exported); DEST: where to build (only sim/, lcp/ and
# artifact_scripts/ are copied; a few data files of the repository are
# not needed). Installs libgraphviz-dev (its headers; Debian/Ubuntu) if
# missing. Builds with plain make, as the artifact's README does, ~2.5 min
# on one core. Then: bench/uno-multipath.py --artifact DEST.
set -euo pipefail
[ $# -eq 2 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
src=$1 dest=$2
mkdir -p "$dest"
if git -C "$src" rev-parse --is-bare-repository 2>/dev/null | grep -q true || [ ! -d "$src/sim" ]; then
    # (git archive may complain about files it lacks outside these three.)
    git -C "$src" archive HEAD sim lcp artifact_scripts | tar -x -C "$dest"
else
    cp -r "$src/sim" "$src/lcp" "$src/artifact_scripts" "$dest/"
fi
if [ ! -e /usr/include/graphviz/cgraph.h ]; then
    echo "installing libgraphviz-dev (headers the artifact includes)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libgraphviz-dev g++ make >/dev/null
fi
jobs=$(nproc)
make -C "$dest/sim" -j"$jobs" libhtsim.a >"$dest/build.log" 2>&1
make -C "$dest/sim/datacenter" -j"$jobs" htsim_lcp_entry_modern >>"$dest/build.log" 2>&1
echo "built $dest/sim/datacenter/htsim_lcp_entry_modern (log: $dest/build.log)"
