#!/bin/sh
# Daemon output back-pressure (issue 12 §6): `yes` as a daemon for T seconds
# (default 60), the server's output going to /dev/null, to a reader that
# takes 1 MB/s, and to --log-dir only. Prints the server's peak RSS and CPU,
# how long `syndicate status` took meanwhile, and how much was logged.
#
#   sh etc/bench/yes-daemon.sh          # from the repository root
#   T=10 sh etc/bench/yes-daemon.sh
set -eu
T=${T:-60}
work=$(mktemp -d)
pid= reader=
trap 'kill $pid $reader 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/syndicate-server" ./cmd/syndicate-server
go build -o "$work/syndicate" ./cmd/syndicate
mkdir "$work/cfg"
printf '<require-service <daemon chatty>>\n<daemon chatty ["yes" "x"]>\n' >"$work/cfg/chatty.pr"
hz=$(getconf CLK_TCK)

measure() { # name; the server's pid in $pid
	sleep 2
	t0=$(date +%s.%N)
	"$work/syndicate" --admin "$work/admin.sock" status >/dev/null
	t1=$(date +%s.%N)
	sleep $((T - 2))
	set -- $(cut -d' ' -f14,15 "/proc/$pid/stat")
	cpu=$(echo "($1 + $2) / $hz" | bc -l)
	rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
	printf '%-28s peak RSS %6d kB  CPU %5.1f s  status answered in %.0f ms\n' \
		"$name" "$rss" "$cpu" "$(echo "($t1 - $t0) * 1000" | bc -l)"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
}

# exec: $! must be the server itself, not a subshell around it.
run() { exec "$work/syndicate-server" --no-banner --admin-socket "$work/admin.sock" --log-format json -c "$work/cfg" "$@"; }

name="stderr to /dev/null"
run 2>/dev/null &
pid=$!
measure

name="stderr read at 1 MB/s"
mkfifo "$work/slow"
# 1 MB a second until the writer is gone.
(while [ "$(head -c 1048576 | wc -c)" -gt 0 ]; do sleep 1; done) <"$work/slow" &
reader=$!
run 2>"$work/slow" &
pid=$!
measure
wait $reader 2>/dev/null || true
reader=

name="--log-dir only"
mkdir "$work/logs"
run --service-output=false --log-dir "$work/logs" 2>/dev/null &
pid=$!
measure
echo "    log directory: $(du -sh "$work/logs" | cut -f1), $(grep -ho 'dropped: [0-9]*' "$work"/logs/*/* 2>/dev/null | awk '{n+=$2} END {print n+0}') lines reported dropped"
