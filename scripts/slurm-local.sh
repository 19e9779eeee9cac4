#!/usr/bin/env bash
# A single-host Slurm cluster: munged + slurmctld + slurmd on localhost, everything (config,
# key, state, logs, pid files, two fake GPUs) under DIR, nothing in /etc.
#
#   scripts/slurm-local.sh up DIR     write DIR/etc/slurm.conf, start the daemons, wait idle
#   scripts/slurm-local.sh down DIR   stop the daemons by their pid files
#
# Clients find the cluster through the config file, so run them with
#   export SLURM_CONF=DIR/etc/slurm.conf
# (`up` prints it). The node has 2 CPUs and 2 GPUs whose device files are made with mknod (the
# same numbers as /dev/null), so `--gres=gpu:1` tasks get CUDA_VISIBLE_DEVICES=0 or 1, two at a
# time. No slurmdbd: `sacct` says accounting is disabled; finished jobs are in
# DIR/log/jobcomp.txt (jobcomp/filetxt). Scheduler delays are off so small jobs start at once.
# Needs root and Debian's slurm-wlm and munge (apt-get install -y slurm-wlm munge).
# POLYPROF_SLURM_PORT (default 6817) moves slurmctld's port; slurmd's is the next one.
set -euo pipefail
cmd="${1:-}"
dir="${2:-}"
[[ "$cmd" == up || "$cmd" == down ]] && [[ -n "$dir" ]] || {
    echo "usage: $0 up|down DIR" >&2
    exit 2
}
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
port="${POLYPROF_SLURM_PORT:-6817}"

# Stop one daemon by its pid file, and wait until it is gone (a restart would otherwise find
# its port taken).
stop() {
    local pidfile="$dir/$1.pid" pid
    [[ -s "$pidfile" ]] || return 0
    pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
}

down() {
    stop slurmd
    stop slurmctld
    stop munged
}

if [[ "$cmd" == down ]]; then
    down
    echo "slurm-local: down"
    exit 0
fi

for bin in munged slurmctld slurmd sinfo; do
    command -v "$bin" >/dev/null || [[ -x "/usr/sbin/$bin" ]] || {
        echo "slurm-local: $bin not found: apt-get install -y slurm-wlm munge" >&2
        exit 1
    }
done
export PATH="$PATH:/usr/sbin"
down
# A failed start stops what it started (the caller's DIR may be removed right after).
trap down ERR
mkdir -p "$dir"/{etc,state,spool,log,fakegpu,munge}
for i in 0 1; do
    [[ -e "$dir/fakegpu/nvidia$i" ]] || mknod "$dir/fakegpu/nvidia$i" c 1 3
done
[[ -s "$dir/munge/munge.key" ]] || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 700 "$dir/munge"
chmod 400 "$dir/munge/munge.key"
socket="$dir/munge/munge.socket"

cat >"$dir/etc/slurm.conf" <<EOF
ClusterName=pplocal
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,default_queue_depth=1000
DefMemPerCPU=100
ReturnToService=2
KillWait=2
MinJobAge=600
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
GresTypes=gpu
NodeName=localhost CPUs=2 RealMemory=2000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$dir/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=localhost Name=gpu File=$dir/fakegpu/nvidia[0-1]
EOF

export SLURM_CONF="$dir/etc/slurm.conf"
munged --force --socket="$socket" --key-file="$dir/munge/munge.key" --pid-file="$dir/munged.pid" \
    --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"
# -i: ignore state left by an earlier cluster in DIR (job ids restart, no stale jobs).
slurmctld -i
slurmd -N localhost

# 60 s: a loaded CI machine starts the daemons slowly.
for _ in $(seq 1 300); do
    if sinfo -h -N -o '%t' 2>/dev/null | grep -qx idle; then
        echo "slurm-local: up; export SLURM_CONF=$SLURM_CONF"
        exit 0
    fi
    sleep 0.2
done
echo "slurm-local: localhost did not become idle in 60 s (is another cluster on port $port?):" >&2
sinfo -N >&2 || true
tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
# Leave nothing running: the caller's DIR may be removed right after this failure.
down
exit 1
