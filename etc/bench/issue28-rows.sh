#!/bin/sh
# Issue 28's rows, a server of another tree against this one, interleaved,
# NATS beside the wire rows (docs/benchmarks.md, "Issue 28, ninth session").
#
#   sh etc/bench/issue28-rows.sh BASE_SERVER NOW_SERVER
#
# BASE_SERVER and NOW_SERVER are built with `go build -o FILE ./cmd/syndicate-server`
# in each tree (`git worktree add --detach DIR REV` for the older one).
# NATS_BENCH_DIR names the directory of the NATS anchor's binaries
# (../shared/anchors); without it the wire rows print no NATS figures.
set -eu
BASE=$1
NOW=$2
root=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -tags e2e -c -o "$tmp/e2e.test" ./cmd/syndicate-server
go test -c -o "$tmp/ds.test" ./dataspace
T=$tmp/e2e.test
run() { echo "== $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) $1 $2"; shift 2; "$@" 2>&1 | grep -E '^Benchmark' || true; }
cd "$root/cmd/syndicate-server"
for i in 1 2 3; do
	for s in "$BASE" "$NOW"; do
		run pubsub "$s" env SYNDICATE_E2E_SERVER="$s" "$T" -test.run '^$' -test.bench 'WirePubSub/batch=1$' -test.benchtime 2000000x
	done
done
for i in 1 2; do
	for s in "$BASE" "$NOW"; do
		run reqrep "$s" env SYNDICATE_E2E_SERVER="$s" "$T" -test.run '^$' -test.bench 'WireReqRep' -test.benchtime 20000x
		run idle+flood "$s" env SYNDICATE_E2E_SERVER="$s" "$T" -test.run '^$' -test.bench 'WireIdleSessions|Flood' -test.benchtime 1x
	done
done
for s in "$BASE" "$NOW"; do
	run pss "$s" env DAEMONS=1000 SYNDICATE_E2E_SERVER="$s" "$T" -test.run '^$' -test.bench 'DaemonPSS' -test.benchtime 1x
	run startup "$s" env SYNDICATE_E2E_SERVER="$s" "$T" -test.run '^$' -test.bench 'Startup|IdleRSS' -test.benchtime 20x
	run restart "$s" env SYNDICATE_E2E_SERVER="$s" "$T" -test.run '^$' -test.bench 'DaemonRestart$' -test.benchtime 1x
	run facts "$s" env SYNDICATE_E2E_SERVER="$s" "$T" -test.run '^$' -test.bench 'FactsMemory' -test.benchtime 1x
done
cd "$root/dataspace"
for i in 1 2 3; do
	run inproc now "$tmp/ds.test" -test.run '^$' -test.bench 'PubSub$' -test.benchtime 2s
done
echo "(in-process pub/sub of the other tree: go test -run '^\$' -bench 'PubSub\$' -benchtime 2s ./dataspace/ there)"
cd "$root"
N=1000000 sh etc/bench/logs-vs-s6log.sh
