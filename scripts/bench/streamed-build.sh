#!/usr/bin/env bash
# Builds a database of random 1 KiB records from a file larger than the setup's memory, and
# prints the build's time and peak resident memory next to the disk's speed, measured in the
# same run: reading the input and writing a file of the database's size with direct I/O.
#
#   scripts/bench/streamed-build.sh [GIB] [FOLDER]    (default 16 GiB, in ./streamed-build)
#
# Needs about 2.1 x GIB of free disk, GNU time (/usr/bin/time) and an `obscura` release build.
set -euo pipefail
gib=${1:-16}
dir=${2:-streamed-build}
obscura=${OBSCURA:-target/release/obscura}
mkdir -p "$dir"
input="$dir/input.bin"
if [ "$(stat -c %s "$input" 2>/dev/null || echo 0)" != "$((gib << 30))" ]; then
  echo "writing $gib GiB of random records to $input"
  head -c "$((gib << 30))" /dev/urandom >"$input"
fi
seconds() { /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1; }
sync
read_s=$(seconds dd if="$input" of=/dev/null bs=16M iflag=direct status=none)
write_s=$(seconds dd if=/dev/zero of="$dir/disk-test.bin" bs=16M count=$((gib * 64 + 40)) oflag=direct conv=fsync status=none)
rm -f "$dir/disk-test.bin"
sync
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
/usr/bin/time -f "build %e s, peak resident memory %M KiB" \
  "$obscura" build --input "$input" --record-size 1024 --out "$dir/db.obs" --stream
awk -v r="$read_s" -v w="$write_s" -v g="$gib" 'BEGIN {
  printf "disk: read %.1f s (%.2f GB/s), write %.1f s (%.2f GB/s), together %.1f s\n",
    r, g * 1.073741824 / r, w, (g + 0.6) * 1.073741824 / w, r + w }'
rm -f "$dir/db.obs"
