#!/usr/bin/env bash
# compare-nats.sh: measure this server and NATS side by side, in one run, on this machine
# (docs/benchmarks.md). Both servers run as separate processes on 127.0.0.1 and are driven
# over loopback TCP by their own benchmark clients: `syndicate bench` and `nats bench`.
#
#   a. pub/sub: 1 publisher, 1 subscriber, SIZE-byte payloads; delivered msg/s. NATS
#      publishes back to back; ours at 1, 20 and 500 messages per turn.
#   b. request/reply, one request in flight: p50/p90/p99 round trip.
#   c. server memory per idle session: RSS with SESSIONS idle clients, less idle RSS.
#
# nats-server and the nats CLI come from the Go module proxy (go install, into $WORK/bin);
# our binaries are built from this checkout. The script starts and stops its own servers by
# PID, binds only 127.0.0.1, bounds every step with a timeout, and prints a table last.
#
# Usage: docs/compare-nats.sh            (defaults: 5 s / 1,000,000 messages, 20,000 round
#        DUR=2s MSGS=300000 RTT_N=5000 SESSIONS=200 docs/compare-nats.sh     trips, 1,000 sessions)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
WORK=${WORK:-/tmp/syndicate-compare-nats}
NATS_SERVER_VERSION=${NATS_SERVER_VERSION:-v2.15.2}
NATSCLI_VERSION=${NATSCLI_VERSION:-v0.5.1}
DUR=${DUR:-5s}
MSGS=${MSGS:-1000000}
RTT_N=${RTT_N:-20000}
SESSIONS=${SESSIONS:-1000}
SIZE=${SIZE:-16}
mkdir -p "$WORK/bin" "$WORK/cfg" "$WORK/admin"
chmod 700 "$WORK/admin"

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- build and install (idempotent) ------------------------------------------------------
echo "building syndicate-server and syndicate ..." >&2
(cd "$REPO" && go build -o "$WORK/bin/syndicate-server" ./cmd/syndicate-server && go build -o "$WORK/bin/syndicate" ./cmd/syndicate)
if ! "$WORK/bin/nats-server" --version 2>/dev/null | grep -q "${NATS_SERVER_VERSION#v}"; then
  echo "installing nats-server $NATS_SERVER_VERSION ..." >&2
  GOBIN="$WORK/bin" timeout 1200 go install "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION"
fi
if ! "$WORK/bin/nats" --version 2>/dev/null | grep -q "${NATSCLI_VERSION#v}"; then
  echo "installing the nats CLI $NATSCLI_VERSION ..." >&2
  GOBIN="$WORK/bin" timeout 1500 go install "github.com/nats-io/natscli/nats@$NATSCLI_VERSION"
fi
echo "$("$WORK/bin/nats-server" --version); nats CLI $("$WORK/bin/nats" --version); $(go version); $(nproc) CPUs"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
json() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
wait_for() { # wait_for SECONDS COMMAND...: poll until COMMAND succeeds
  local end=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || { echo "timed out waiting for: $*" >&2; exit 1; }
    sleep 0.05
  done
}

# --- syndicate-server --------------------------------------------------------------------
# A TCP listener whose gatekeeper serves one bind, in a bind space of its own, to a fresh
# dataspace for the benchmark; the bound ref (with its signature) is published in $config
# so that the admin socket can tell us what to pass to --ref.
SPORT=$(free_port)
cat > "$WORK/cfg/bench.pr" <<EOF
let ?binds = dataspace
let ?bench = dataspace
let ?bound = dataspace
<require-service <gatekeeper \$binds>>
? <service-object <gatekeeper \$binds> ?gk> [
  <require-service <relay-listener <tcp "127.0.0.1" $SPORT> \$gk>>
]
\$binds <bind <ref {oid: "bench", key: #"compare-nats"}> \$bench \$bound>
\$bound ? <bound ?r> [ \$config <bench-ref \$r> ]
EOF
ADMIN=(--admin-socket "$WORK/admin/admin.sock")
"$WORK/bin/syndicate-server" -c "$WORK/cfg" --no-banner --log-level warn "${ADMIN[@]}" 2>"$WORK/syndicate-server.log" &
SPID=$!
PIDS+=("$SPID")
SYN=("$WORK/bin/syndicate" "${ADMIN[@]}" --timeout 30s)
syn_has() { "${SYN[@]}" dump "$1" 2>/dev/null | grep -q "$2"; }
wait_for 20 syn_has '<bench-ref _>' ref
wait_for 20 syn_has '<service-state <relay-listener _ _> ready>' ready
REF=$("${SYN[@]}" dump '<bench-ref _>' | sed -n 's/^<bench-ref \(<ref .*>\)>$/\1/p' | head -1)
CONNECT=(--connect "<tcp \"127.0.0.1\" $SPORT>" --ref "$REF")
BENCH=("$WORK/bin/syndicate" "${CONNECT[@]}" --timeout 30s bench)
echo "syndicate-server: pid $SPID port $SPORT"

sleep 1
S_IDLE=$(rss_kb "$SPID")
S_PS=()
for k in 1 20 500; do
  out=$(timeout 300 "${BENCH[@]}" pubsub --size "$SIZE" --per-turn "$k" --duration "$DUR" --json --quiet)
  echo "syndicate pubsub, $k per turn: $out"
  S_PS+=("$(echo "$out" | json msg_per_s)")
done
out=$(timeout 300 "${BENCH[@]}" reqrep --size "$SIZE" --n "$RTT_N" --warmup 2000 --json --quiet)
echo "syndicate reqrep: $out"
S_P50=$(echo "$out" | json p50_us); S_P90=$(echo "$out" | json p90_us); S_P99=$(echo "$out" | json p99_us)
cleanup

# Memory per idle session on a fresh server (the runs above leave garbage behind).
"$WORK/bin/syndicate-server" -c "$WORK/cfg" --no-banner --log-level warn "${ADMIN[@]}" 2>>"$WORK/syndicate-server.log" &
SPID=$!
PIDS+=("$SPID")
wait_for 20 syn_has '<bench-ref _>' ref
wait_for 20 syn_has '<service-state <relay-listener _ _> ready>' ready
REF=$("${SYN[@]}" dump '<bench-ref _>' | sed -n 's/^<bench-ref \(<ref .*>\)>$/\1/p' | head -1)
CONNECT=(--connect "<tcp \"127.0.0.1\" $SPORT>" --ref "$REF")
sleep 1
out=$(timeout 300 "$WORK/bin/syndicate" "${CONNECT[@]}" --timeout 30s bench idle --sessions "$SESSIONS" --json --quiet)
echo "syndicate idle: $out"
S_SESS=$(echo "$out" | json rss_per_session_kb)
cleanup

# --- nats-server -------------------------------------------------------------------------
NPORT=$(free_port)
"$WORK/bin/nats-server" -a 127.0.0.1 -p "$NPORT" -l "$WORK/nats-server.log" &
NPID=$!
PIDS+=("$NPID")
NATS=("$WORK/bin/nats" -s "nats://127.0.0.1:$NPORT")
wait_for 20 grep -q "Server is ready" "$WORK/nats-server.log"
echo "nats-server: pid $NPID port $NPORT"
sleep 1
N_IDLE=$(rss_kb "$NPID")

timeout 300 "${NATS[@]}" bench sub bench.ps --msgs "$MSGS" --size "$SIZE" --no-progress >"$WORK/nats-sub.out" 2>&1 &
SUB=$!
# The subscriber says it started once connected; a moment more for its SUB to be processed.
wait_for 30 grep -q "\[1\] Starting Core NATS subscriber" "$WORK/nats-sub.out"
sleep 0.3
timeout 300 "${NATS[@]}" bench pub bench.ps --msgs "$MSGS" --size "$SIZE" --no-progress >"$WORK/nats-pub.out" 2>&1
wait "$SUB"
N_PS=$(sed -n 's/.*subscriber stats: \([0-9,]*\) msgs\/sec.*/\1/p' "$WORK/nats-sub.out" | tr -d ,)
echo "nats pubsub: $(grep stats "$WORK/nats-sub.out")"

timeout 300 "${NATS[@]}" bench service serve bench.rr --msgs $((RTT_N + 2000)) --no-progress >"$WORK/nats-serve.out" 2>&1 &
SERVE=$!
wait_for 30 grep -q "\[1\] Starting Core NATS service server" "$WORK/nats-serve.out"
sleep 0.3
timeout 300 "${NATS[@]}" bench service request bench.rr --msgs 2000 --size "$SIZE" --no-progress >/dev/null 2>&1 # warm-up
timeout 300 "${NATS[@]}" bench service request bench.rr --msgs "$RTT_N" --size "$SIZE" --no-progress >"$WORK/nats-req.out" 2>&1
wait "$SERVE" || true
stat() { sed -n "s/.*requester stats:.* $1: \([0-9,.]*\)us.*/\1/p" "$WORK/nats-req.out" | tr -d ,; }
N_P50=$(stat P50); N_P90=$(stat P90); N_P99=$(stat P99)
echo "nats reqrep: $(grep stats "$WORK/nats-req.out")"

# Idle connections: SESSIONS subscribers each waiting for one message.
timeout 300 "${NATS[@]}" bench sub bench.idle --clients "$SESSIONS" --msgs 1 --no-progress >"$WORK/nats-idle.out" 2>&1 &
IDLE=$!
wait_for 60 sh -c "[ \$(ls /proc/$NPID/fd | wc -l) -ge $SESSIONS ]"
sleep 2
N_CONNS=$(rss_kb "$NPID")
"${NATS[@]}" pub bench.idle x >/dev/null 2>&1
wait "$IDLE" || true
N_SESS=$(python3 -c "print(round(($N_CONNS - $N_IDLE) / $SESSIONS, 1))")
cleanup

# --- the table ---------------------------------------------------------------------------
python3 - "$N_PS" "${S_PS[@]}" "$N_P50" "$S_P50" "$N_P90" "$S_P90" "$N_P99" "$S_P99" "$N_SESS" "$S_SESS" "$N_IDLE" "$S_IDLE" <<'EOF'
import sys
a = [float(x) for x in sys.argv[1:]]
nps, s1, s20, s500, n50, s50, n90, s90, n99, s99, nsess, ssess, nidle, sidle = a
rows = [
    ("pub/sub msg/s, 1 per turn", f"{nps/1e6:.2f} M", f"{s1/1e6:.2f} M", s1 / nps),
    ("pub/sub msg/s, 20 per turn", f"{nps/1e6:.2f} M", f"{s20/1e6:.2f} M", s20 / nps),
    ("pub/sub msg/s, 500 per turn", f"{nps/1e6:.2f} M", f"{s500/1e6:.2f} M", s500 / nps),
    ("request/reply p50", f"{n50:.1f} µs", f"{s50:.1f} µs", s50 / n50),
    ("request/reply p90", f"{n90:.1f} µs", f"{s90:.1f} µs", s90 / n90),
    ("request/reply p99", f"{n99:.1f} µs", f"{s99:.1f} µs", s99 / n99),
    ("memory per idle session (RSS)", f"{nsess:.1f} kB", f"{ssess:.1f} kB", ssess / nsess),
    ("server idle RSS", f"{nidle/1024:.1f} MiB", f"{sidle/1024:.1f} MiB", sidle / nidle),
]
print()
print("| measure | NATS | syndicate | syndicate ÷ NATS |")
print("|---|---|---|---|")
for name, n, s, r in rows:
    print(f"| {name} | {n} | {s} | {r:.2f}× |")
EOF
