# Cross-compiling ffn.cpp for 64-bit Arm Linux with Debian's g++-aarch64-linux-gnu, its
# libraries from Debian's arm64 multiarch packages (libsleef-dev:arm64, libgtest-dev:arm64,
# libgmock-dev:arm64), and the tests run under qemu-user (scripts/test.sh, the aarch64 stage):
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# On an Arm machine itself no toolchain file is needed: the same two commands as on x86-64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Headers and libraries of the target from the multiarch folders; programs (cmake's own
# helpers, Python) from the host.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# Tests (ctest, gtest_discover_tests) run the target's programs under qemu-user. The loader
# must find the target's libraries by LD_LIBRARY_PATH: with -L alone it reads the host's
# ld.so.cache, may load the host's arm64 libc from /lib/aarch64-linux-gnu beside the cross
# one, and a program that starts a thread hangs.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib:/usr/lib/aarch64-linux-gnu)
