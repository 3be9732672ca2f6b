#!/usr/bin/env bash
# Builds fio 3.33's t/io_uring, the reference limit of bench/vs_fio.py (issue 3: "fio's own
# t/io_uring, the best user-space io_uring code known, as the limit").
#
# Fetches fio 3.33's source from Debian's package archive, checks its sha256 (and refuses it on a
# mismatch), extracts it into <repo>/target/bench-scratch/fio-3.33, runs ./configure and
# `make t/io_uring`, and prints the binary's path. Does nothing if the binary is already there
# (remove target/bench-scratch/fio-3.33 to build again, e.g. after installing libaio-dev).
# Needs curl or wget, tar, gcc and make; libaio's headers (Debian: libaio-dev) for t/io_uring's
# aio mode (-a1), without which the zram aio row has no reference.
set -euo pipefail

VERSION=3.33
URL="http://deb.debian.org/debian/pool/main/f/fio/fio_${VERSION}.orig.tar.gz"
SHA256=d2410e13e0f379d061d077cc5ae325835bb7c6186aa7bafc1df954cbc9b014fc

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SCRATCH="$REPO/target/bench-scratch"
SRC="$SCRATCH/fio-$VERSION"
TARBALL="$SCRATCH/fio_${VERSION}.orig.tar.gz"
BIN="$SRC/t/io_uring"

if [[ -x "$BIN" ]]; then
    echo "t/io_uring already built (remove $SRC to build again):" >&2
    echo "$BIN"
    exit 0
fi

missing=()
if command -v curl >/dev/null; then
    fetch=(curl -fsSL -o "$TARBALL.part" "$URL")
elif command -v wget >/dev/null; then
    fetch=(wget -q -O "$TARBALL.part" "$URL")
else
    missing+=("curl or wget")
fi
for tool in tar gcc make sha256sum; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
    echo "build_t_io_uring.sh: missing: ${missing[*]} (Debian: apt-get install curl gcc make)" >&2
    exit 1
fi
if [[ ! -e /usr/include/libaio.h ]]; then
    echo "note: libaio's headers are not installed (Debian: apt-get install libaio-dev): t/io_uring is" >&2
    echo "      built without aio (-a1), and vs_fio.py's zram aio row gets no reference" >&2
fi

mkdir -p "$SCRATCH"
if [[ -e "$TARBALL" ]] && echo "$SHA256  $TARBALL" | sha256sum --check --status; then
    echo "using $TARBALL (sha256 checked)" >&2
else
    echo "fetching $URL" >&2
    rm -f "$TARBALL.part"
    "${fetch[@]}"
    got="$(sha256sum "$TARBALL.part" | cut -d' ' -f1)"
    if [[ "$got" != "$SHA256" ]]; then
        rm -f "$TARBALL.part"
        echo "build_t_io_uring.sh: refusing $URL: sha256 $got, expected $SHA256" >&2
        exit 1
    fi
    mv "$TARBALL.part" "$TARBALL"
    echo "sha256 checked: $SHA256" >&2
fi

# A half-extracted or half-built tree from an interrupted run is replaced, not reused.
rm -rf "$SRC" "$SRC.part"
mkdir "$SRC.part"
tar -xzf "$TARBALL" -C "$SRC.part" --strip-components=1
[[ -f "$SRC.part/t/io_uring.c" ]] || { echo "build_t_io_uring.sh: no t/io_uring.c in $TARBALL" >&2; exit 1; }
mv "$SRC.part" "$SRC"
cd "$SRC"
echo "building in $SRC: ./configure && make t/io_uring" >&2
./configure >configure.log 2>&1 || { tail -20 configure.log >&2; echo "build_t_io_uring.sh: ./configure failed (see $SRC/configure.log)" >&2; exit 1; }
make -j2 t/io_uring >make.log 2>&1 || { tail -20 make.log >&2; echo "build_t_io_uring.sh: make t/io_uring failed (see $SRC/make.log)" >&2; exit 1; }
if grep -q '^#define CONFIG_LIBAIO' config-host.h; then
    echo "aio (-a1): available" >&2
else
    echo "aio (-a1): NOT available (built without libaio's headers)" >&2
fi
echo "$BIN"
