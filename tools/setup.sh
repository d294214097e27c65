#!/usr/bin/env bash
# Installs missing Debian packages, configures and builds (Release) into build/.
# Idempotent: when nothing changed it costs a dpkg query and a no-op ninja run.
#   tools/setup.sh [--quiet]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
quiet=0
[[ "${1:-}" == "--quiet" ]] && quiet=1
say() { [[ $quiet == 1 ]] || echo "setup: $*" >&2; }

packages=(cmake ninja-build g++ clang clang-format libclang-rt-14-dev python3-dev pybind11-dev zlib1g-dev
          libboost-graph-dev libtbb-dev nlohmann-json3-dev libyaml-cpp-dev libprotobuf-dev protobuf-compiler
          libgtest-dev libgmock-dev libbenchmark-dev
          python3-numpy python3-pandas python3-pytest python3-yaml
          python3-matplotlib python3-nbformat python3-nbclient python3-ipykernel
          python3-distributed)
# promtool (metrics.om backfill test) and the OpenMetrics parser: their recommends (exporters,
# web assets) are not needed.
bare_packages=(prometheus python3-prometheus-client)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
missing_bare=()
for p in "${bare_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing_bare+=("$p")
done
if ((${#missing[@]} + ${#missing_bare[@]})); then
  say "installing ${missing[*]} ${missing_bare[*]}"
  sudo=""
  [[ $(id -u) == 0 ]] || sudo="sudo"
  $sudo apt-get update -qq >&2 || true
  if ((${#missing[@]})); then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
  fi
  if ((${#missing_bare[@]})); then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing_bare[@]}" >&2
  fi
fi

build="$root/build"
if [[ ! -f "$build/build.ninja" ]]; then
  say "configuring $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
fi
jobs=$(nproc)
if [[ $quiet == 1 ]]; then
  out=$(ninja -C "$build" -j"$jobs" 2>&1) || { echo "$out" >&2; exit 1; }
else
  ninja -C "$build" -j"$jobs" >&2
fi
