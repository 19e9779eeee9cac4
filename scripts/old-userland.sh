#!/usr/bin/env bash
# An old Linux userland to run the wheel's executables in: a chroot built by debootstrap
# (--variant=minbase, about 110 MB and a minute, once; reused while DIR/rootfs is complete).
#
#   scripts/old-userland.sh DIR     build DIR/rootfs when missing; print "ROOTFS GLIBC"
#
# The release to build is the first of POLYPROF_OLD_USERLAND ("SUITE MIRROR[;SUITE MIRROR…]")
# that debootstrap can fetch; by default Debian buster (glibc 2.28, as RHEL/Rocky 8) from
# archive.debian.org, else Ubuntu bionic (glibc 2.27) from archive.ubuntu.com, for where only
# that archive is reachable. No image is pulled; it needs root, debootstrap (apt-get install -y
# debootstrap) and the mirror the first time.
set -euo pipefail
dir="${1:-}"
[[ -n "$dir" ]] || {
    echo "usage: $0 DIR" >&2
    exit 2
}
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
rootfs="$dir/rootfs"
done_mark="$rootfs/.polyprof-complete"
releases="${POLYPROF_OLD_USERLAND:-buster http://archive.debian.org/debian;bionic http://archive.ubuntu.com/ubuntu}"

if [[ ! -e "$done_mark" ]]; then
    command -v debootstrap >/dev/null || {
        echo "old-userland: need debootstrap: apt-get install -y debootstrap" >&2
        exit 1
    }
    IFS=';' read -ra candidates <<<"$releases"
    built=false
    for candidate in "${candidates[@]}"; do
        read -r suite mirror <<<"$candidate"
        flags=(--variant=minbase)
        # Debian's debootstrap knows Ubuntu's suites but this host may lack Ubuntu's keyring;
        # the chroot only runs the executables under test, so an unsigned fetch is accepted.
        if [[ "$mirror" == *ubuntu* && ! -e /usr/share/keyrings/ubuntu-archive-keyring.gpg ]]; then
            flags+=(--no-check-gpg)
        fi
        echo "old-userland: debootstrap $suite from $mirror (about a minute, once)" >&2
        rm -rf "$dir/building" "$rootfs"
        if debootstrap "${flags[@]}" "$suite" "$dir/building" "$mirror" >"$dir/debootstrap-$suite.log" 2>&1; then
            mv "$dir/building" "$rootfs"
            echo "$suite $mirror" >"$done_mark"
            built=true
            break
        fi
        echo "old-userland: $suite from $mirror failed: $(tail -n 1 "$dir/debootstrap-$suite.log")" >&2
    done
    rm -rf "$dir/building"
    $built || exit 1
fi
glibc=$(chroot "$rootfs" getconf GNU_LIBC_VERSION | awk '{print $2}')
echo "$rootfs $glibc"
