#!/usr/bin/env bash
# A Python base image built from Debian's packages, for machines that cannot pull the official
# python image: the Dockerfile takes it as BASE_IMAGE, unchanged otherwise.
#   image/debian-base.sh TAG
# Debian's python3, python3-venv and ca-certificates (no compilers), `python` on PATH as in the
# official image, and the build machine's CA bundle, so pip inside a build trusts whatever the
# build machine trusts (a TLS-intercepting proxy included).
set -euo pipefail
tag=${1:?usage: debian-base.sh TAG}
suite=${DEBIAN_SUITE:-bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
bundle=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

for tool in debootstrap docker; do
  command -v "$tool" >/dev/null || {
    echo "debian-base.sh: $tool is missing; install it with: apt-get install -y debootstrap docker.io" >&2
    exit 1
  }
done
[ -r "$bundle" ] || { echo "debian-base.sh: no CA bundle at $bundle (set CA_BUNDLE)" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
  "$suite" "$root" "$mirror" >/dev/null
cp "$bundle" "$root/etc/ssl/certs/ca-certificates.crt"
ln -sf /usr/bin/python3 "$root/usr/local/bin/python"
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/log/* \
       "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*
tar -C "$root" -c . | docker import \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
  --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["python3"]' - "$tag" >/dev/null
echo "debian-base.sh: built $tag ($suite, $(docker run --rm --network none "$tag" python --version))"
