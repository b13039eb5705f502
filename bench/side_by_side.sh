#!/bin/bash
# Issue 24's side-by-side rounds (docs/benchmarks.md): binaries interleaved on one machine.
#   bash bench/side_by_side.sh OUTDIR BIN...      (e.g. a worktree's build of e43ea23, then main's)
# Per round (three): Vidur 10k and 100k (bench/vidur-70b.yaml, whole process, /usr/bin/time) and
# `bench serving --requests 20000` for each binary; then `reproduce -j 2` twice per binary, each
# into a fresh folder (deleting the last run's files just before a run makes ext4's inode
# allocator skip the recently deleted ones: a variable cost). Results: OUTDIR/vidur.txt,
# bench.txt, reproduce.txt. Needs python3 for the traces (made once in OUTDIR).
set -eu
out=$1; shift
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR BIN..." >&2; exit 2; }
mkdir -p "$out"
here=$(cd "$(dirname "$0")/.." && pwd)
for n in 10000 100000; do
  [ -f "$out/v$n.jsonl" ] || python3 "$here/bench/vidur_trace.py" $n "$out/v$n.jsonl"
done
cd "$here"
for round in 1 2 3; do
  for b in "$@"; do
    for n in 10000 100000; do
      /usr/bin/time -f "$b vidur-$n %e s %U u %S s %M KB" "$b" run bench/vidur-70b.yaml \
        --set workload.trace.path="$out/v$n.jsonl" --out "$out/vidur-out" --force -q 2>&1 |
        grep -v warning >> "$out/vidur.txt"
    done
    echo "$b bench $("$b" bench serving --requests 20000 2>/dev/null |
      grep -o '"requests_per_s": *[0-9.]*')" >> "$out/bench.txt"
  done
done
i=0
for round in 1 2; do
  for b in "$@"; do
    i=$((i + 1))
    /usr/bin/time -f "$b reproduce %e s %U u %S s" "$b" reproduce --out "$out/reproduce-$i" -j 2 \
      -q 2>> "$out/reproduce.txt"
  done
done
uptime >> "$out/reproduce.txt"
rm -rf "$out"/reproduce-* "$out/vidur-out"
