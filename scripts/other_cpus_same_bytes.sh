#!/usr/bin/env bash
# Runs example scenes on CPUs this machine emulates with qemu and compares what they write,
# byte for byte, with the native x86-64 build's files (docs/physics.md, "Order, threads and
# determinism"; results in docs/benchmarks.md, "Issue 13: the same bytes on other CPUs"):
#
# - aarch64: an aarch64 build of xpbd-sim (the portable lanes, NEON) under qemu-aarch64;
# - x86-64 baseline: the native release binary itself under qemu-x86_64 -cpu qemu64, a CPU
#   without AVX, where it must detect that and take the portable lanes (SSE2).
#
# The native run takes 1 thread and the emulated ones 2, so a match also covers that.
#
# Usage: scripts/other_cpus_same_bytes.sh [scene.toml …]   (default: every scene in scenes/
# but the dam break, which alone takes about 20 minutes under qemu, and then the skirt with
# every output format and previews)
# Needs: Debian/Ubuntu packages gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user
# (installed when missing), and the rustup target aarch64-unknown-linux-gnu (added).
# Exit status: 0 when every file matches, 1 when any differs or a run fails.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v qemu-aarch64 > /dev/null || ! command -v aarch64-linux-gnu-gcc > /dev/null; then
    sudo_if_needed=$([ "$(id -u)" = 0 ] || echo sudo)
    $sudo_if_needed apt-get install -y -q gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
fi
rustup target add aarch64-unknown-linux-gnu > /dev/null

target=aarch64-unknown-linux-gnu
arm_dir=${ARM_TARGET_DIR:-target/aarch64-check}
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
cargo build --release --quiet
CARGO_TARGET_DIR=$arm_dir cargo build --release --quiet --target $target
native=target/release/xpbd-sim
arm=$arm_dir/$target/release/xpbd-sim

scenes=("$@")
if [ ${#scenes[@]} = 0 ]; then
    mapfile -t scenes < <(ls scenes/*.toml | grep -v dam_break)
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The stats log's frame records without `wall_ms` (the run record names the SIMD path and
# the thread count, which differ on purpose); every other file as it is.
frames() { grep '"type":"frame"' "$1" | sed 's/"wall_ms":[0-9.e+-]*,\{0,1\}//'; }
status=0

# Files of `$out/$1` that differ from the native run's `$out/native`: "n of m differ", and
# the run's SIMD path (in a subshell: the caller reads the count).
differing() {
    local files=0 differ=0 file
    while read -r file; do
        files=$((files + 1))
        case $file in
        *.jsonl) cmp -s <(frames "$out/native/$file") <(frames "$out/$1/$file") ;;
        *) cmp -s "$out/native/$file" "$out/$1/$file" ;;
        esac || { differ=$((differ + 1)); echo "  differs: $1/$file" >&2; }
    done < <(cd "$out/native" && find . -type f | sort)
    local simd
    simd=$(grep -o '"simd":"[a-z0-9]*"' "$out/$1/stats.jsonl" | head -1 | cut -d'"' -f4)
    echo "$differ of $files differ ($simd)"
}

# Runs `scene` with `args` natively and emulated, as case `name`, and prints its row.
compare() {
    local name=$1 scene=$2
    shift 2
    rm -rf "$out/native" "$out/arm" "$out/baseline"
    local start native_s arm_s baseline_s
    start=$(date +%s)
    "$native" run "$scene" --out "$out/native" --quiet --threads 1 "$@" \
        || { echo "| $name | native run failed |"; status=1; return; }
    native_s=$(($(date +%s) - start))
    start=$(date +%s)
    qemu-aarch64 -L /usr/aarch64-linux-gnu "$arm" run "$scene" --out "$out/arm" --quiet \
        --threads 2 "$@" || { echo "| $name | aarch64 run failed |"; status=1; return; }
    arm_s=$(($(date +%s) - start))
    start=$(date +%s)
    qemu-x86_64 -cpu qemu64 "$native" run "$scene" --out "$out/baseline" --quiet \
        --threads 2 "$@" || { echo "| $name | x86-64 baseline run failed |"; status=1; return; }
    baseline_s=$(($(date +%s) - start))
    local arm_files baseline_files
    arm_files=$(differing arm)
    baseline_files=$(differing baseline)
    [[ $arm_files == "0 of"* && $baseline_files == "0 of"* ]] || status=1
    echo "| $name | $arm_files, ${arm_s} s | $baseline_files, ${baseline_s} s | ${native_s} s |"
}

echo "| scene | aarch64 under qemu, 2 threads | x86-64 without AVX under qemu, 2 threads |" \
    "native, 1 thread |"
echo "| --- | --- | --- | --- |"
for scene in "${scenes[@]}"; do
    compare "$(basename "$scene" .toml)" "$scene"
done
if [ $# = 0 ]; then
    # The whole-run formats and the previews, which no example scene writes.
    compare "skirt, every format and previews" scenes/skirt.toml --format obj --format ply \
        --format usd --format mdd --format pc2 \
        --set 'output.preview={ every = 12, size = [320, 180] }'
fi
exit $status
