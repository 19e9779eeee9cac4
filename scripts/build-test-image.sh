#!/usr/bin/env bash
# Builds the tiny image the container tests and benchmark use, from Debian's static busybox,
# without pulling anything: a rootfs tarball fed to `docker import`. Idempotent: an existing
# image is kept unless FORCE=1.
#   scripts/build-test-image.sh [TAG]     (default polyprof-test-busybox:1)
set -euo pipefail
tag="${1:-${POLYPROF_TEST_IMAGE:-polyprof-test-busybox:1}}"
if [[ "${FORCE:-0}" != 1 ]] && docker image inspect "$tag" >/dev/null 2>&1; then
    echo "$tag already present"
    exit 0
fi
busybox="${BUSYBOX:-/bin/busybox}"
# A dynamic busybox would not run in an image without a libc.
if ! [[ -x "$busybox" ]] || ldd "$busybox" >/dev/null 2>&1; then
    echo "need a static busybox at $busybox: apt-get update && apt-get install -y busybox-static" >&2
    exit 1
fi
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,tmp,etc,work}
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
    [[ "$applet" == busybox ]] || ln -s busybox "$root/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
tar -C "$root" -c . | docker import --change 'ENV PATH=/bin' --change 'CMD ["/bin/sh"]' - "$tag" >/dev/null
echo "built $tag ($(docker image inspect -f '{{.Size}}' "$tag") bytes)"
