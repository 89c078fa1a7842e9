#!/usr/bin/env bash
# Builds one OCI image per daemon (publisher, projector, catalog, relayctl)
# without pulling any base image (the publisher from this module; the
# catalog demo's projector, catalog and relayctl, which carries the
# catalog's hooks and migrations, from examples/catalog-demo): FROM scratch + a static binary
# (CGO_ENABLED=0), Debian's CA bundle (package ca-certificates) and a
# passwd entry for the non-root user 65532. Builder: buildah from Debian
# (installed when missing), vfs storage, chroot isolation. Output:
# .run/images/<daemon>.tar (oci-archive), tagged eventrelay/<daemon>:$VERSION.
# Usage: VERSION=v1.2.3 scripts/images.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
OUT=.run/images
DAEMONS=(publisher projector catalog relayctl)

if ! command -v buildah >/dev/null; then
	echo "images: installing buildah from Debian"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends buildah >/dev/null
fi
if [ ! -s /etc/ssl/certs/ca-certificates.crt ]; then
	echo "images: installing Debian's ca-certificates"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates >/dev/null
fi

rm -rf "$OUT" && mkdir -p "$OUT/bin" "$OUT/root/etc/ssl/certs" "$OUT/root/tmp"
ldflags="-s -w -X github.com/eventrelay/eventrelay/internal/version.Version=$VERSION -X main.version=$VERSION"
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$OUT/bin/" ./cmd/publisher
CGO_ENABLED=0 go -C examples/catalog-demo build -trimpath -ldflags "$ldflags" -o "$PWD/$OUT/bin/" ./cmd/projector ./cmd/catalog ./cmd/relayctl
cp /etc/ssl/certs/ca-certificates.crt "$OUT/root/etc/ssl/certs/"
printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' >"$OUT/root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$OUT/root/etc/group"
chmod 1777 "$OUT/root/tmp"

# Reproducible: the image's created time is the commit's, and its labels
# name the source and revision it was built from.
revision=$(git -C "$(dirname "$0")/.." rev-parse HEAD 2>/dev/null || echo unknown)
created=$(git -C "$(dirname "$0")/.." log -1 --format=%ct 2>/dev/null || date +%s)
B=(buildah --storage-driver vfs)
export BUILDAH_ISOLATION=chroot
for d in "${DAEMONS[@]}"; do
	ctr=$("${B[@]}" from --quiet scratch)
	"${B[@]}" copy --quiet "$ctr" "$OUT/root/" /
	"${B[@]}" copy --quiet --chmod 0755 "$ctr" "$OUT/bin/$d" "/$d"
	"${B[@]}" config --entrypoint "[\"/$d\"]" --cmd '' --user 65532:65532 \
		--env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
		--label org.opencontainers.image.title="eventrelay $d" \
		--label org.opencontainers.image.version="$VERSION" \
		--label org.opencontainers.image.revision="$revision" \
		--label org.opencontainers.image.created="$(date -u -d "@$created" +%Y-%m-%dT%H:%M:%SZ)" "$ctr"
	"${B[@]}" commit --quiet --format oci --timestamp "$created" "$ctr" "eventrelay/$d:$VERSION" >/dev/null
	"${B[@]}" rm "$ctr" >/dev/null
	rm -f "$OUT/$d.tar"
	"${B[@]}" push --quiet "eventrelay/$d:$VERSION" "oci-archive:$OUT/$d.tar:eventrelay/$d:$VERSION"
	echo "images: eventrelay/$d:$VERSION -> $OUT/$d.tar ($(du -h "$OUT/$d.tar" | cut -f1))"
done
