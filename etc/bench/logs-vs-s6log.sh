#!/bin/sh
# Service output throughput: syndicate-server --log-dir against s6-log, both
# writing the same stream of short lines to a rotated directory (issue 15).
#
#   sh etc/bench/logs-vs-s6log.sh            # from the repository root
#   N=2000000 sh etc/bench/logs-vs-s6log.sh  # lines (default: about 100 MB)
#
# Needs s6-log (Debian: apt-get install s6) and GNU time (/usr/bin/time).
# For each run it prints lines/s (wall clock, until the last line is in the
# directory) and CPU per line (user+system of the logger process only: the
# server for syndicate, s6-log for s6; `cat` feeds both). It also checks
# that the server's files hold every line, intact and in order.
set -eu
N=${N:-2000000}
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
pid=
go build -o "$work/syndicate-server" ./cmd/syndicate-server
stream=$work/stream.txt
seq -f 'line %08.0f of the benchmark stream, with short text' 1 "$N" >"$stream"
bytes=$(stat -c %s "$stream")
echo "stream: $N lines, $bytes bytes"
hz=$(getconf CLK_TCK)

report() { # name seconds cpu-seconds; the last s6-log T figures in $s6t
	awk -v n="$N" -v name="$1" -v s="$2" -v c="$3" -v peer="$s6t" 'BEGIN {
		printf "%-34s %6.2f s  %10.0f lines/s  %6.0f ns CPU/line", name, s, n / s, c * 1e9 / n
		if (split(peer, p, " ") == 2)
			printf "  (%.2fx s6-log T lines/s, %.2fx its CPU/line)", (n / s) / p[1], (c * 1e9 / n) / p[2]
		printf "\n" }'
}
s6t=

# s6-log: without and with timestamps (T: ISO 8601, like ours).
for script in "n10 s1000000" "n10 s1000000 T"; do
	rm -rf "$work/s6"
	mkdir "$work/s6"
	cat "$stream" | /usr/bin/time -f '%e %U %S' -o "$work/s6.time" s6-log -b $script "$work/s6"
	read -r wall user sys <"$work/s6.time"
	report "s6-log $script" "$wall" "$(echo "$user + $sys" | bc)"
done
s6t=$(awk -v n="$N" -v s="$wall" -v c="$(echo "$user + $sys" | bc)" 'BEGIN { printf "%f %f", n / s, c * 1e9 / n }')

# syndicate-server: a one-shot daemon cats the stream; the run ends when the
# last line is in the directory.
run_server() { # name size count extra-flags...
	name=$1 size=$2 count=$3
	shift 3
	rm -rf "$work/cfg" "$work/logs"
	mkdir "$work/cfg" "$work/logs"
	printf '<require-service <daemon bench>>\n<daemon bench <one-shot ["cat" "%s"]>>\n' "$stream" >"$work/cfg/bench.pr"
	start=$(date +%s.%N)
	"$work/syndicate-server" --no-banner --admin-socket - --log-dir "$work/logs" \
		--log-file-size "$size" --log-file-count "$count" "$@" -c "$work/cfg" 2>"$work/server.err" &
	pid=$!
	last=$(tail -n 1 "$stream")
	# The last line may end a file that was just rotated, and the server's
	# own lines about the daemon's exit may follow it: look at the last
	# lines of every file.
	until tail -qn 5 "$work"/logs/daemon-bench/* 2>/dev/null | grep -qF "$last"; do sleep 0.05; done
	end=$(date +%s.%N)
	set -- $(cut -d' ' -f14,15 "/proc/$pid/stat")
	rss=$(awk '/VmHWM/ {print $2 " " $3}' "/proc/$pid/status")
	kill "$pid"
	wait "$pid" || true
	pid=
	report "$name" "$(echo "$end - $start" | bc)" "$(echo "($1 + $2) / $hz" | bc -l)"
	echo "    server peak RSS $rss; dropped: $(grep -c 'dropping' "$work/server.err" || true)"
}
run_server "syndicate --log-dir (console off)" 1000000 10 --service-output=false
run_server "syndicate --log-dir + console json" 1000000 10 --log-format json
# Intact and in order: one big file, compared with the stream.
run_server "syndicate --log-dir, one file" 1000000000 1 --service-output=false
# (The server's own lines about the daemon, such as its exit, are left out.)
if grep '^[^ ]* \[[0-9]*\] out: ' "$work/logs/daemon-bench/current" | cut -d' ' -f4- | cmp -s - "$stream"; then
	echo "    every line intact and in order"
else
	echo "    MISMATCH between the stream and the log directory"
	exit 1
fi
