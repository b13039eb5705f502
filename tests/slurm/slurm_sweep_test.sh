#!/usr/bin/env bash
# Runs a `kappasim sweep` as a Slurm job array on a private single-node Slurm started here, and
# checks that the collected results are byte-identical to a local run (tests/slurm/README.md).
#
#   tests/slurm/slurm_sweep_test.sh KAPPASIM_BIN [SPEC]   the test (SPEC: tests/slurm/sweep.yaml)
#   tests/slurm/slurm_sweep_test.sh --bringup-only        only start Slurm and run a trivial
#                                                         2-task array (no kappasim needed)
#
# Everything (munge key and socket, slurm.conf, state, spool, logs, pid files) lives in one
# temporary folder; the daemons are stopped by PID and the folder removed on exit. Nothing under
# /etc, no systemd, no system-wide daemon is touched. Exit 77 (CTest SKIP_RETURN_CODE) when not
# root or when a Slurm / munge binary is missing; 0 on success; 1 on failure.
set -euo pipefail
export LC_ALL=C

SKIP=77
HERE=$(cd "$(dirname "$0")" && pwd)
BRINGUP_ONLY=0
if [ "${1:-}" = "--bringup-only" ]; then
  BRINGUP_ONLY=1
  KAPPASIM=""
  SPEC=""
else
  [ $# -ge 1 ] || { echo "usage: $0 KAPPASIM_BIN [SPEC] | --bringup-only" >&2; exit 2; }
  KAPPASIM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
  SPEC=$(cd "$(dirname "${2:-$HERE/sweep.yaml}")" && pwd)/$(basename "${2:-$HERE/sweep.yaml}")
  [ -x "$KAPPASIM" ] || { echo "slurm test: $KAPPASIM is not an executable" >&2; exit 1; }
  [ -f "$SPEC" ] || { echo "slurm test: no spec $SPEC" >&2; exit 1; }
fi
START_TIMEOUT=${SLURM_TEST_START_TIMEOUT:-60}   # seconds for the node to become idle
JOB_TIMEOUT=${SLURM_TEST_JOB_TIMEOUT:-90}       # seconds for the array job to finish

# --- skip conditions -----------------------------------------------------------------------
# The daemons live in /usr/sbin, often not on a non-root PATH.
export PATH="$PATH:/usr/sbin:/sbin"
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: the Slurm test needs root (slurmd starts jobs as their user)"
  exit $SKIP
fi
missing=()
for b in munged slurmctld slurmd sbatch sinfo squeue scancel; do
  command -v "$b" >/dev/null 2>&1 || missing+=("$b")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "SKIPPED: missing ${missing[*]} (apt-get install slurm-wlm munge; tools/quickstart.sh test does)"
  exit $SKIP
fi

T0=$EPOCHREALTIME
log() { echo "slurm test [$(awk -v a="$EPOCHREALTIME" -v b="$T0" 'BEGIN { printf "%5.1f", a - b }') s]: $*"; }
fail() { echo "slurm test: FAILED: $*" >&2; exit 1; }

# --- temp folder and teardown ----------------------------------------------------------------
# A Unix socket path must fit in 108 bytes: a long $TMPDIR falls back to /tmp.
base=${TMPDIR:-/tmp}
[ ${#base} -le 60 ] || base=/tmp
TMP=$(mktemp -d "$base/kappasim-slurm.XXXXXX")
MUNGED_PID=""
CTLD_PID=""
SLURMD_PID=""
KEEP=${SLURM_TEST_KEEP:-0}   # 1: keep the temp folder for inspection

show_logs() {
  # *.log: the daemons' log files; *.out: their stderr (errors before the log file opens).
  local f n
  for f in "$TMP"/log/*; do
    [ -s "$f" ] || continue
    n=40; [ "${f%.out}" != "$f" ] && n=15
    echo "----- $f (last $n lines)" >&2
    tail -n "$n" "$f" >&2
  done
}

stop_pid() {  # stop_pid PID NAME: TERM, wait up to 10 s, then KILL
  local pid=$1 name=$2
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  echo "slurm test: $name ($pid) ignored TERM, killing" >&2
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  set +e
  if [ -n "$CTLD_PID" ] && kill -0 "$CTLD_PID" 2>/dev/null; then
    # Cancel whatever is left (after a timeout) so no job step outlives the test.
    if [ -n "$(squeue -h -o %i 2>/dev/null)" ]; then
      squeue -h -o %A | sort -u | xargs -r scancel --quiet 2>/dev/null
      for _ in $(seq 1 50); do
        [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
        sleep 0.2
      done
    fi
  fi
  stop_pid "$SLURMD_PID" slurmd
  stop_pid "$CTLD_PID" slurmctld
  stop_pid "$MUNGED_PID" munged
  if [ "$rc" -ne 0 ] && [ "$rc" -ne "$SKIP" ]; then show_logs; fi
  if [ "$KEEP" = 1 ]; then echo "slurm test: kept $TMP" >&2; else rm -rf "$TMP"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

NODE=$(hostname -s)
mkdir -p "$TMP"/{etc,munge,state,log,run,jobs} "$TMP/spool/slurmd-$NODE"
# munged wants its socket reachable by every user, and no folder on the way writable by others.
chmod 0711 "$TMP"

# --- munge -----------------------------------------------------------------------------------
MUNGE_SOCKET=$TMP/munge/munge.socket
if command -v mungekey >/dev/null 2>&1; then
  mungekey --create --keyfile="$TMP/munge/munge.key"
else
  dd if=/dev/urandom of="$TMP/munge/munge.key" bs=1024 count=1 status=none
fi
chmod 0400 "$TMP/munge/munge.key"
# -F (foreground) in the background, so $! is the daemon's PID; --force because the socket and
# key are not in munge's own root-owned folders.
munged -F --force --socket="$MUNGE_SOCKET" --key-file="$TMP/munge/munge.key" \
  --log-file="$TMP/log/munged.log" --pid-file="$TMP/run/munged.pid" \
  --seed-file="$TMP/munge/munged.seed" >>"$TMP/log/munged.out" 2>&1 &
MUNGED_PID=$!
for _ in $(seq 1 50); do [ -S "$MUNGE_SOCKET" ] && break; sleep 0.1; done
[ -S "$MUNGE_SOCKET" ] || fail "munged did not create $MUNGE_SOCKET"
if command -v munge >/dev/null 2>&1; then
  munge -n -S "$MUNGE_SOCKET" | unmunge -S "$MUNGE_SOCKET" >/dev/null || fail "munge round trip"
fi

# --- slurm.conf --------------------------------------------------------------------------------
port_free() {  # port_free PORT: nothing listens on it
  ! ss -Htln "sport = :$1" 2>/dev/null | grep -q . &&
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
pick_ports() {  # two consecutive free ports in 20000-59999
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 40000))
    if port_free "$p" && port_free $((p + 1)); then echo "$p"; return 0; fi
  done
  return 1
}
CTLD_PORT=$(pick_ports) || fail "no free ports"
SLURMD_PORT=$((CTLD_PORT + 1))
CPUS=$(nproc)
sed -e "s|@HOST@|$NODE|g" -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@SLURMD_PORT@|$SLURMD_PORT|g" \
    -e "s|@MUNGE_SOCKET@|$MUNGE_SOCKET|g" -e "s|@DIR@|$TMP|g" -e "s|@CPUS@|$CPUS|g" \
    "$HERE/slurm.conf.in" >"$TMP/etc/slurm.conf"
: >"$TMP/etc/plugstack.conf"   # no SPANK plugins (the system's plugstack.conf is not read)
# Nothing from the caller's environment (say, CI running inside a Slurm job) may redirect the
# test's jobs or shard its local run: drop every SLURM_*, SBATCH_*, SQUEUE_*, SINFO_* variable
# and the Kubernetes shard variables, then point every Slurm command at the test's own config.
for v in $(compgen -e); do
  case "$v" in SLURM_* | SBATCH_* | SQUEUE_* | SINFO_* | JOB_COMPLETION_INDEX | KAPPASIM_SHARDS) unset "$v" ;; esac
done
export SLURM_CONF=$TMP/etc/slurm.conf

# --- daemons -----------------------------------------------------------------------------------
log "starting slurmctld (port $CTLD_PORT) and slurmd (port $SLURMD_PORT) for node $NODE, $CPUS CPUs in $TMP"
slurmctld -D -c -i -f "$SLURM_CONF" >>"$TMP/log/slurmctld.out" 2>&1 &
CTLD_PID=$!
slurmd -D -N "$NODE" -f "$SLURM_CONF" >>"$TMP/log/slurmd.out" 2>&1 &
SLURMD_PID=$!

state=""
for _ in $(seq 1 $((START_TIMEOUT * 2))); do
  kill -0 "$CTLD_PID" 2>/dev/null || fail "slurmctld exited"
  kill -0 "$SLURMD_PID" 2>/dev/null || fail "slurmd exited"
  state=$(sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -1 || true)
  [ "$state" = idle ] && break
  sleep 0.5
done
[ "$state" = idle ] || fail "node $NODE not idle after ${START_TIMEOUT} s (state: '${state:-no answer}')"
log "node $NODE is idle"

# Waits for an sbatch --wait job under a time limit; returns sbatch's status.
run_array() {  # run_array SBATCH-ARGS...
  timeout --kill-after=5 "$JOB_TIMEOUT" sbatch --wait "$@"
}

# The output file of array task I (sbatch --output=PREFIX_%A_%a.out), empty if none: slurmstepd
# creates it when the task starts, so its existence shows that the task ran.
task_output() {  # task_output PREFIX I
  local f
  for f in "$1"_*_"$2".out; do [ -e "$f" ] && { echo "$f"; return 0; }; done
  return 0
}

if [ "$BRINGUP_ONLY" = 1 ]; then
  # shellcheck disable=SC2016  # expanded by the job's shell, not here
  run_array --array=0-1 --output="$TMP/jobs/trivial_%A_%a.out" --job-name=trivial \
    --wrap 'echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT"' >"$TMP/jobs/sbatch.out" ||
    fail "trivial array job (sbatch exit $?): $(cat "$TMP/jobs/sbatch.out")"
  for i in 0 1; do
    f=$(task_output "$TMP/jobs/trivial" $i)
    [ -n "$f" ] || fail "no output file of array task $i"
    grep -qx "task $i of 2" "$f" || { cat "$f" >&2; fail "array task $i did not report itself in $f"; }
  done
  log "trivial 2-task array ran: $(cat "$TMP"/jobs/trivial_*.out | tr '\n' ' ')"
  log "PASSED (bring-up only)"
  exit 0
fi

# --- the sweep as a 2-task array, then locally -------------------------------------------------
TASKS=2
"$KAPPASIM" sweep --help >/dev/null 2>&1 || fail "$KAPPASIM has no working 'sweep' command"
OUT=$TMP/slurm-out
LOCAL=$TMP/local-out
SCRIPT=$TMP/jobs/sweep.sbatch
"$KAPPASIM" sweep emit slurm "$SPEC" --out "$OUT" --tasks $TASKS --time 00:05:00 \
  --partition debug --script "$SCRIPT" || fail "sweep emit slurm (exit $?)"
grep -q "^#SBATCH --array=0-$((TASKS - 1))\$" "$SCRIPT" ||
  { cat "$SCRIPT" >&2; fail "emitted script has no '#SBATCH --array=0-$((TASKS - 1))'"; }
log "emitted $SCRIPT; submitting it"
# --output on the command line overrides the script's own, so each task's output file is known.
if ! run_array --output="$TMP/jobs/sweep_%A_%a.out" "$SCRIPT" >"$TMP/jobs/sbatch.out" 2>&1; then
  cat "$TMP/jobs/sbatch.out" >&2
  for f in "$TMP"/jobs/sweep_*.out; do [ -f "$f" ] && { echo "----- $f" >&2; cat "$f" >&2; }; done
  fail "array job did not succeed (sbatch --wait, limit ${JOB_TIMEOUT} s)"
fi
log "array job finished: $(tr '\n' ' ' <"$TMP/jobs/sbatch.out")"
# Each task ran, and ran its own shard: the runner's first line (on stderr, which Slurm writes to
# the task's output file) names it, "sweep NAME: 8 points, shard I/N has K, ...".
for i in $(seq 0 $((TASKS - 1))); do
  f=$(task_output "$TMP/jobs/sweep" "$i")
  [ -n "$f" ] || fail "no output file of array task $i: it never started"
  grep -q "shard $i/$TASKS has" "$f" || { cat "$f" >&2; fail "array task $i did not run shard $i/$TASKS ($f)"; }
done

"$KAPPASIM" sweep collect "$OUT" || fail "sweep collect $OUT (exit $?)"
"$KAPPASIM" sweep "$SPEC" --out "$LOCAL" -j 2 --quiet || fail "local sweep (exit $?)"
for f in results.csv results.jsonl; do
  [ -s "$OUT/$f" ] || fail "the Slurm run has no $f"
  cmp "$OUT/$f" "$LOCAL/$f" || { diff "$OUT/$f" "$LOCAL/$f" >&2 || true; fail "$f differs from the local run"; }
done
# And the content, by hand: 4 x values times 2 sleeps, every point ok, x2 = x*x (the selftest
# kind's metric), here recomputed by awk from the spec's x values.
check=$(awk -F, '
  NR == 1 { for (c = 1; c <= NF; c++) col[$c] = c; next }
  { n++; if ($col["status"] != "ok") bad = bad " point " $col["point"] " " $col["status"]
    x = $col["x"] + 0; if ($col["x2"] + 0 != x * x) bad = bad " point " $col["point"] " x2 " $col["x2"] }
  END { printf "%d%s", n, bad }' "$OUT/results.csv")
[ "$check" = 8 ] || { cat "$OUT/results.csv" >&2; fail "results.csv: expected 8 ok points with x2 = x^2, got: $check"; }
log "results.csv (8 points, x2 = x^2) and results.jsonl identical to the local run"
log "PASSED"
