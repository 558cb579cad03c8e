#!/usr/bin/env bash
# Bundles, from this Debian machine (set up by scripts/setup.sh), what building trainscope needs
# and a machine without network access may lack, for bench/gpu_check.sh there (BUNDLE=DIR):
#
#   bash bench/gpu_bundle.sh DIR [PYTHON_VERSION]     # PYTHON_VERSION of the target (3.12)
#
# DIR/include, DIR/share/cmake: the headers and CMake packages of nlohmann-json3-dev,
#   libcli11-dev and libcpp-httplib-dev, and the OpenSSL, zlib and Brotli headers that Debian's
#   httplib.h includes (its CPPHTTPLIB_*_SUPPORT macros);
# DIR/lib: Debian's libcpp-httplib and the Brotli libraries it links (OpenSSL and zlib are on
#   every machine with Python); DIR/lib/pkgconfig/cpp-httplib.pc pointing into DIR;
# DIR/whl: wheels of the build tools pyproject.toml pins (scikit-build-core, pybind11).
# About 6 MB. gpu_check.sh installs the wheels into a scratch folder and points CMake,
# pkg-config and the linker at DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${1:?usage: bench/gpu_bundle.sh DIR [PYTHON_VERSION]}
PYV=${2:-3.12}
mkdir -p "$DIR"/{include,share/cmake,lib/pkgconfig,whl}
DIR=$(cd "$DIR" && pwd)
ARCH=$(gcc -print-multiarch)

for pkg in nlohmann-json3-dev libcli11-dev libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || { echo "gpu_bundle: $pkg is not installed here" >&2; exit 1; }
  while read -r f; do
    [[ -f $f ]] || continue
    case $f in
      /usr/include/"$ARCH"/*) rel=${f#/usr/include/"$ARCH"/} ;;  # opensslconf.h and friends
      /usr/include/*) rel=${f#/usr/include/} ;;
      /usr/share/cmake/*) rel=../share/cmake/${f#/usr/share/cmake/} ;;
      /usr/lib/"$ARCH"/cmake/*) rel=../share/cmake/${f#/usr/lib/"$ARCH"/cmake/} ;;
      *) continue ;;
    esac
    mkdir -p "$(dirname "$DIR/include/$rel")"
    cp "$f" "$DIR/include/$rel"
  done < <(dpkg -L "$pkg")
done
for lib in libcpp-httplib libbrotlicommon libbrotlidec libbrotlienc; do
  cp -a /usr/lib/"$ARCH"/"$lib".so* "$DIR/lib/"
done
version=$(pkg-config --modversion cpp-httplib)
cat >"$DIR/lib/pkgconfig/cpp-httplib.pc" <<EOF
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: cpp-httplib
Description: Debian's cpp-httplib, bundled by trainscope's bench/gpu_bundle.sh
Version: $version
Libs: -L\${libdir} -lcpp-httplib
Cflags: -I\${includedir} $(pkg-config --cflags-only-other cpp-httplib)
EOF

# The build tools at pyproject.toml's pins, as wheels for the target's Python.
mapfile -t pins < <(grep -oE '"(scikit-build-core|pybind11)==[^"]+"' "$ROOT/pyproject.toml" | tr -d '"')
"$ROOT/.venv/bin/python" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" \
  --implementation cp --platform manylinux2014_x86_64 -d "$DIR/whl" "${pins[@]}"
echo "gpu_bundle: $DIR ($(du -sh "$DIR" | cut -f1)): ${pins[*]}, httplib $version"
