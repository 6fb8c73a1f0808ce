#!/usr/bin/env bash
# Installs the built project into a temporary prefix, then builds and runs a consumer of it
# twice: through find_package(ffn) and through pkg-config.
set -euo pipefail
build_dir=$1
consumer_src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > /dev/null
cmake -S "$consumer_src" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" > /dev/null
cmake --build "$work/build" > /dev/null
"$work/build/consumer"
libdir=$(ls -d "$work"/prefix/lib*/pkgconfig | head -n1)
PKG_CONFIG_PATH=$libdir c++ -o "$work/consumer_pc" "$consumer_src/main.cpp" $(PKG_CONFIG_PATH=$libdir pkg-config --cflags --libs ffn)
"$work/consumer_pc"
"$work/prefix/bin/ffn" params --d 64 | grep -q "parameters"
echo "install_consumer: find_package, pkg-config and the installed ffn tool work"
