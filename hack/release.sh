#!/usr/bin/env bash
# Reproducible static release builds of unstick.
#
#   hack/release.sh [VERSION]      build every target into dist/ (default VERSION: git describe)
#   hack/release.sh --verify [V]   build twice and fail unless the two builds are
#                                  byte-for-byte identical; the second build runs from a copy
#                                  of the tree at another path with an empty build cache
#
# Environment: TARGETS="linux/amd64 ..." narrows the targets; DIST=dir writes elsewhere.
#
# Every binary is static (CGO_ENABLED=0), built with -trimpath and -buildvcs=false and the
# version stamped into internal/cli.Version, so the same commit and Go version give the same
# bytes on any machine. Each target also gets a .tar.gz (the binary, the kubectl completion
# helper, the README) with fixed owners, modes and times; SHA256SUMS lists everything, and
# dist/krew/unstick.yaml is the krew manifest with the archives' sha256 filled in.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

module=github.com/unstick-dev/unstick
all_targets="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64"

if [ "${1:-}" = "--verify" ]; then
  shift
  a="$(mktemp -d)"; b="$(mktemp -d)"; src="$(mktemp -d)"; cache="$(mktemp -d)"
  trap 'chmod -R u+w "$cache" 2>/dev/null; rm -rf "$a" "$b" "$src" "$cache"' EXIT
  epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
  v="${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
  SOURCE_DATE_EPOCH="$epoch" DIST="$a" "$0" "$v" >/dev/null
  tar --exclude=./.git --exclude=./dist -cf - . | tar -C "$src" -xf -
  SOURCE_DATE_EPOCH="$epoch" DIST="$b" GOCACHE="$cache" "$src/hack/release.sh" "$v" >/dev/null
  if diff -u "$a/SHA256SUMS" "$b/SHA256SUMS"; then
    echo "reproducible: two builds gave identical bytes"
    cat "$a/SHA256SUMS"
  else
    echo "NOT reproducible: the two builds differ (above)" >&2
    exit 1
  fi
  exit 0
fi

version="${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
case "$version" in
  *[!A-Za-z0-9._+-]*) echo "hack/release.sh: version $version has characters a file name cannot take" >&2; exit 2 ;;
esac
dist="${DIST:-$root/dist}"
targets="${TARGETS:-$all_targets}"
# Archive times: the commit's time, so a rebuild of the same commit is identical.
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"

rm -rf "$dist"
mkdir -p "$dist/krew"
export CGO_ENABLED=0 GOFLAGS="-buildvcs=false" GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

for t in $targets; do
  os="${t%/*}" arch="${t#*/}"
  name="unstick_${version}_${os}_${arch}"
  exe=unstick
  [ "$os" = windows ] && exe=unstick.exe
  stage="$dist/.stage-$name"
  mkdir -p "$stage"
  echo "building $t" >&2
  GOOS="$os" GOARCH="$arch" go build -trimpath -buildvcs=false \
    -ldflags "-s -w -X $module/internal/cli.Version=$version" \
    -o "$stage/$exe" ./cmd/unstick
  cp deploy/krew/kubectl_complete-unstick README.md "$stage/"
  chmod 0755 "$stage/$exe" "$stage/kubectl_complete-unstick"
  chmod 0644 "$stage/README.md"
  cp "$stage/$exe" "$dist/${name}$( [ "$os" = windows ] && echo .exe)"
  tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=gnu \
    -C "$stage" -cf - README.md kubectl_complete-unstick "$exe" | gzip -9 -n > "$dist/$name.tar.gz"
  rm -rf "$stage"
done

(cd "$dist" && sha256sum unstick_* > SHA256SUMS)

# The krew manifest: the template with the version and each archive's sha256.
manifest="$(sed "s/{{VERSION}}/$version/g" deploy/krew/unstick.yaml)"
for t in $all_targets; do
  os="${t%/*}" arch="${t#*/}"
  sum=""
  f="$dist/unstick_${version}_${os}_${arch}.tar.gz"
  [ -f "$f" ] && sum="$(sha256sum "$f" | cut -d' ' -f1)"
  manifest="${manifest//\{\{SHA256_${os}_${arch}\}\}/${sum:-not-built}}"
done
printf '%s\n' "$manifest" > "$dist/krew/unstick.yaml"

echo "dist: $(cd "$dist" && ls | tr '\n' ' ')" >&2
cat "$dist/SHA256SUMS"
