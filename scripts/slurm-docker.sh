#!/usr/bin/env bash
# A three-node Slurm cluster in Docker: slurmctld in `pp-slurm-ctl`, slurmd in `pp-slurm-n1` and
# `pp-slurm-n2` (one fake GPU each: a /dev/null-like device file), on an internal network.
#
#   scripts/slurm-docker.sh up DIR      build the image once (debootstrap + docker import; reused
#                                       when present), write DIR/etc, start the cluster, wait idle
#   scripts/slurm-docker.sh down DIR    remove the containers and the network (the image stays)
#   scripts/slurm-docker.sh image DIR   only build the image when missing (CI does it before
#                                       the tests, so no test waits for debootstrap)
#
# DIR/shared is bind-mounted at the SAME path in every container: it stands in for the cluster's
# shared filesystem (put the batch root and the polyprof binaries there). Slurm commands run
# inside the controller: `docker exec pp-slurm-ctl sbatch …` (or the driver itself runs there).
# SlurmdTimeout is short so a stopped node (`docker stop pp-slurm-n2`) is marked down in seconds.
# Needs root, Docker, and debootstrap the first time (apt-get install -y debootstrap).
set -euo pipefail
cmd="${1:-}"
dir="${2:-}"
[[ "$cmd" == up || "$cmd" == down || "$cmd" == image ]] && [[ -n "$dir" ]] || {
    echo "usage: $0 up|down|image DIR" >&2
    exit 2
}
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
image="${POLYPROF_SLURM_IMAGE:-polyprof-slurm:22.05}"
prefix="${POLYPROF_SLURM_PREFIX:-pp-slurm}"
net="$prefix-net"
nodes=(n1 n2)

down() {
    for c in ctl "${nodes[@]}"; do
        docker rm -f "$prefix-$c" >/dev/null 2>&1 || true
    done
    # By id: two `up`s racing can leave two networks of this name, and a name is then ambiguous.
    docker network ls -q --filter "name=^$net\$" | xargs -r docker network rm >/dev/null 2>&1 || true
}

if [[ "$cmd" == down ]]; then
    down
    echo "slurm-docker: down"
    exit 0
fi

build_image() {
    docker image inspect "$image" >/dev/null 2>&1 && return 0
    command -v debootstrap >/dev/null || {
        echo "slurm-docker: need debootstrap: apt-get install -y debootstrap" >&2
        exit 1
    }
    # The mirror apt already uses, so this works wherever apt does.
    local mirror
    mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
    mirror="${POLYPROF_DEBIAN_MIRROR:-${mirror:-http://deb.debian.org/debian}}"
    local rootfs="$dir/rootfs"
    rm -rf "$rootfs"
    echo "slurm-docker: building $image from $mirror (about 90 s, once)" >&2
    debootstrap --variant=minbase --include=slurmctld,slurmd,munge,slurm-client,procps,iproute2 \
        bookworm "$rootfs" "$mirror" >"$dir/debootstrap.log" 2>&1 || {
        tail -n 20 "$dir/debootstrap.log" >&2
        exit 1
    }
    tar -C "$rootfs" -c . | docker import - "$image" >/dev/null
    rm -rf "$rootfs"
}

write_config() {
    mkdir -p "$dir/etc" "$dir/munge" "$dir/shared/log"
    cat >"$dir/etc/slurm.conf" <<EOF
ClusterName=ppdock
SlurmctldHost=ctl
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=$dir/shared/log/slurmctld.log
SlurmdLogFile=$dir/shared/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,default_queue_depth=1000
DefMemPerCPU=100
ReturnToService=2
SlurmdTimeout=6
MessageTimeout=3
KillWait=2
MinJobAge=600
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/shared/log/jobcomp.txt
GresTypes=gpu
NodeName=n[1-2] CPUs=1 RealMemory=2000 Gres=gpu:1 State=UNKNOWN
PartitionName=gpu Nodes=n[1-2] Default=YES MaxTime=INFINITE State=UP
EOF
    cat >"$dir/etc/gres.conf" <<'EOF'
AutoDetect=off
NodeName=n[1-2] Name=gpu File=/dev/fakegpu0
EOF
    [[ -s "$dir/munge/munge.key" ]] || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$dir/munge/munge.key"
    cat >"$dir/entry.sh" <<'EOF'
#!/bin/bash
# usage: entry.sh ctl|node
set -e
mkdir -p /run/munge /var/spool/slurmctld /var/spool/slurmd
cp /keys/munge.key /etc/munge/munge.key
chown munge:munge /etc/munge/munge.key /run/munge
chmod 400 /etc/munge/munge.key
runuser -u munge -- /usr/sbin/munged
if [ "$1" = ctl ]; then exec /usr/sbin/slurmctld -D -i; fi
[ -e /dev/fakegpu0 ] || mknod /dev/fakegpu0 c 1 3
exec /usr/sbin/slurmd -D -N "$(hostname)"
EOF
    chmod 755 "$dir/entry.sh"
}

build_image
if [[ "$cmd" == image ]]; then
    echo "slurm-docker: $image present"
    exit 0
fi
write_config
down
docker network create --internal "$net" >/dev/null
for c in ctl "${nodes[@]}"; do
    role=node
    [[ "$c" == ctl ]] && role=ctl
    docker run -d --name "$prefix-$c" --hostname "$c" --network "$net" --network-alias "$c" \
        --label polyprof.slurm="$dir" \
        -v "$dir/etc:/etc/slurm:ro" -v "$dir/munge:/keys:ro" -v "$dir/entry.sh:/entry.sh:ro" \
        -v "$dir/shared:$dir/shared" \
        "$image" /entry.sh "$role" >/dev/null
done
# Up = both nodes idle. Reported by the controller, so this also proves munge and the network.
for _ in $(seq 1 120); do
    if docker exec "$prefix-ctl" sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2=="idle"' | grep -c . | grep -qx "${#nodes[@]}"; then
        echo "slurm-docker: up (${nodes[*]} idle; shared: $dir/shared)"
        exit 0
    fi
    sleep 0.5
done
echo "slurm-docker: nodes did not become idle in 60 s:" >&2
docker exec "$prefix-ctl" sinfo -N >&2 || true
tail -n 20 "$dir/shared/log/slurmctld.log" >&2 || true
exit 1
