#!/bin/bash
# The platform runtime gate on every file system this machine can mount (run as root from anywhere):
# the working tree's own ext4, a tmpfs, and loop-mounted ext4, xfs and btrfs images (400 MiB each).
# One result per file system, platform-runtime-cpu-<name>.json, into the folder given as $1.
set -u
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=$1
BASE=$(mktemp -d /tmp/evidence-fs.XXXXXX)
mkdir -p "$OUT"
gate() {  # name work-dir file-system-type
  "$REPO/.venv/bin/python" -B "$REPO/scripts/platform_runtime_check.py" --device cpu --require-device cpu \
    --require-filesystem "$3" --work-dir "$2" --output "$OUT/platform-runtime-cpu-$1.json" > /dev/null
  echo "$1: exit $?"
}
gate ext4-root "$REPO" ext4
mkdir -p "$BASE/tmpfs" && mount -t tmpfs -o size=512m tmpfs "$BASE/tmpfs" && gate tmpfs "$BASE/tmpfs" tmpfs
umount "$BASE/tmpfs"
for fs in ext4 xfs btrfs; do
  truncate -s 400M "$BASE/$fs.img"
  case $fs in
    ext4) mkfs.ext4 -q -F "$BASE/$fs.img" ;;
    xfs) mkfs.xfs -q -f "$BASE/$fs.img" ;;
    btrfs) mkfs.btrfs -q -f "$BASE/$fs.img" > /dev/null ;;
  esac
  mkdir -p "$BASE/$fs" && mount -o loop "$BASE/$fs.img" "$BASE/$fs" && gate "$fs-loop" "$BASE/$fs" "$fs"
  umount "$BASE/$fs"
  rm -f "$BASE/$fs.img"
done
rm -rf "$BASE"
