#!/usr/bin/env bash
# Installs every build and test dependency of cellc/cellrun on a fresh Debian 12 machine.
# Safe to run twice: apt-get skips what is present; a stamp file skips apt-get update when
# the package set is already installed.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache g++ git
  llvm-16-dev llvm-16-tools libmlir-16-dev mlir-16-tools
  libflatbuffers-dev flatbuffers-compiler
  libonnx-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev
  libopenblas0-pthread libopenblas-dev
  python3-onnx python3-numpy python3-torch python3-yaml python3-mpmath
  libcpp-httplib-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libgrpc++-dev protobuf-compiler-grpc python3-prometheus-client python3-venv
  gnuplot-nox libmimalloc-dev libboost-dev zlib1g-dev libbrotli-dev libsimdjson-dev
  dpkg-dev file
  haproxy prometheus
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
