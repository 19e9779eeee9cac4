#!/usr/bin/env bash
# A three-node Ray cluster on this host's loopback addresses, for the tests and the benchmark:
# the head on 127.0.0.2 (GCS, dashboard and Job API; no CPUs or GPUs, so no job runs there) and
# two workers on 127.0.0.3 and 127.0.0.4, each with 2 CPUs, 2 declared GPUs (no devices: Ray
# still pins them in CUDA_VISIBLE_DEVICES) and a resource named after it (`polyprof_w1`,
# `polyprof_w2`). Each node is one `ray start --block` in its own session, its pid in DIR; every
# port is fixed from POLYPROF_RAY_PORT, so nothing talks to anything but 127.0.0.x.
#
#   scripts/ray-local.sh install           the venv with ray[default]==$RAY_VERSION (once)
#   scripts/ray-local.sh up DIR            start the three nodes, wait until all are alive
#   scripts/ray-local.sh stop-node DIR N   kill worker N (1 or 2) and all it started, at once
#                                          (what a node that dies does to its jobs)
#   scripts/ray-local.sh down DIR          stop every node by its pid
#
# `up` prints the dashboard address (http://127.0.0.2:$((POLYPROF_RAY_PORT + 1))).
# POLYPROF_RAY_VENV (default ${CARGO_TARGET_DIR:-target}/tmp/ray-venv) is the virtual
# environment; POLYPROF_RAY_PORT (default 7390) the head's GCS port; worker N uses the ports
# from POLYPROF_RAY_PORT + 100 * N. Workers are started one after the other: two raylets that
# start together on one host can pick the same socket name and both die.
set -euo pipefail
RAY_VERSION=2.60.0
cmd="${1:-}"
dir="${2:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${POLYPROF_RAY_VENV:-${CARGO_TARGET_DIR:-$root/target}/tmp/ray-venv}"
base="${POLYPROF_RAY_PORT:-7390}"
head_ip=127.0.0.2
dashboard="http://$head_ip:$((base + 1))"
export RAY_USAGE_STATS_ENABLED=0
# The nodes run from the venv, as a cluster runs from the environment `ray start` came from: a
# Ray job's entrypoint then finds that Python as `python3` (the actor mode's driver needs it).
export PATH="$venv/bin:$PATH"

usage() {
    echo "usage: $0 install | up DIR | stop-node DIR N | down DIR" >&2
    exit 2
}

install() {
    if "$venv/bin/python" -c "import ray, sys; sys.exit(ray.__version__ != '$RAY_VERSION')" 2>/dev/null &&
        [[ -x "$venv/bin/ray" ]]; then
        return 0
    fi
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q "ray[default]==$RAY_VERSION"
}

# Every process under pid $1 (itself first), by parent links.
tree() {
    local pid="$1" child
    echo "$pid"
    for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do
        tree "$child"
    done
}

# Kill the node whose pid file is $1 and everything it started (collected first, while the
# parent links still lead to it): SIGTERM, then SIGKILL after 5 s; or SIGKILL at once ($2 KILL).
stop_node() {
    local pidfile="$1" signal="${2:-TERM}" pid pids left
    [[ -s "$pidfile" ]] || return 0
    pid="$(cat "$pidfile")"
    pids="$(tree "$pid" | xargs || true)"
    # shellcheck disable=SC2086
    kill "-$signal" $pids 2>/dev/null || true
    for _ in $(seq 1 50); do
        left="$(for p in $pids; do kill -0 "$p" 2>/dev/null && echo "$p"; done | xargs || true)"
        [[ -n "$left" ]] || break
        sleep 0.1
    done
    # shellcheck disable=SC2086
    [[ -z "$left" ]] || kill -KILL $left 2>/dev/null || true
    rm -f "$pidfile"
}

down() {
    stop_node "$dir/worker2.pid"
    stop_node "$dir/worker1.pid"
    stop_node "$dir/head.pid"
}

alive_nodes() {
    "$venv/bin/python" - "$dashboard" <<'EOF' 2>/dev/null || echo 0
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/api/v0/nodes?limit=100", timeout=5) as r:
    nodes = json.load(r)["data"]["result"]["result"]
print(sum(1 for n in nodes if n["state"] == "ALIVE"))
EOF
}

# Wait until $1 nodes are alive (at most 120 s: the head takes 6 to 9 s here, more when busy).
wait_nodes() {
    for _ in $(seq 1 240); do
        [[ "$(alive_nodes)" == "$1" ]] && return 0
        sleep 0.5
    done
    echo "ray-local: $1 nodes not alive after 120 s; logs in $dir/*.log and $dir/tmp/session_latest/logs" >&2
    return 1
}

start_worker() {
    local n="$1" p=$((base + 100 * $1))
    setsid "$venv/bin/ray" start --address="$head_ip:$base" --node-ip-address="127.0.0.$((n + 2))" \
        --num-cpus=2 --num-gpus=2 --resources="{\"polyprof_w$n\": 2}" --object-store-memory=80000000 \
        --node-manager-port=$p --object-manager-port=$((p + 1)) \
        --dashboard-agent-listen-port=$((p + 2)) --dashboard-agent-grpc-port=$((p + 3)) \
        --runtime-env-agent-port=$((p + 4)) --metrics-export-port=$((p + 5)) \
        --min-worker-port=$((p + 10)) --max-worker-port=$((p + 59)) \
        --disable-usage-stats --block >"$dir/worker$n.log" 2>&1 </dev/null &
    echo $! >"$dir/worker$n.pid"
}

case "$cmd" in
install)
    install
    "$venv/bin/ray" --version
    exit 0
    ;;
up | down | stop-node) [[ -n "$dir" ]] || usage ;;
*) usage ;;
esac
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

case "$cmd" in
down)
    down
    echo "ray-local: down"
    exit 0
    ;;
stop-node)
    n="${3:-}"
    [[ "$n" == 1 || "$n" == 2 ]] || usage
    stop_node "$dir/worker$n.pid" KILL
    echo "ray-local: worker $n killed"
    exit 0
    ;;
esac

install
down
# A failed start stops what it started (the caller's DIR may be removed right after).
trap down ERR
setsid "$venv/bin/ray" start --head --node-ip-address=$head_ip --port="$base" \
    --num-cpus=0 --num-gpus=0 --include-dashboard=true --dashboard-host=$head_ip \
    --dashboard-port=$((base + 1)) --ray-client-server-port=$((base + 2)) \
    --dashboard-agent-listen-port=$((base + 3)) --dashboard-agent-grpc-port=$((base + 4)) \
    --runtime-env-agent-port=$((base + 5)) --metrics-export-port=$((base + 6)) \
    --node-manager-port=$((base + 7)) --object-manager-port=$((base + 8)) \
    --min-worker-port=$((base + 10)) --max-worker-port=$((base + 59)) \
    --object-store-memory=100000000 --temp-dir="$dir/tmp" --disable-usage-stats --block \
    >"$dir/head.log" 2>&1 </dev/null &
echo $! >"$dir/head.pid"
wait_nodes 1
start_worker 1
wait_nodes 2
start_worker 2
wait_nodes 3
echo "$dashboard"
