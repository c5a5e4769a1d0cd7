# CMake toolchain for tests/scripts/arm64.sh: Debian's g++-aarch64-linux-gnu cross compiler, and
# qemu-user-static to run what it builds (ctest and Catch2's test discovery go through it).
# With CXX=clang++ in the environment, clang instead (Apple's compiler is a clang): its
# --target makes it an ARM64 cross compiler over the same libraries and headers.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
if("$ENV{CXX}" MATCHES "clang")
  set(CMAKE_C_COMPILER clang)
  set(CMAKE_CXX_COMPILER clang++)
  set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
  set(CMAKE_CXX_COMPILER_TARGET aarch64-linux-gnu)
else()
  set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
  set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
  # GCC notes that std::pair is passed differently since GCC 10.1 on ARM64: nothing to act on
  # here (everything is built by one compiler).
  set(CMAKE_CXX_FLAGS_INIT -Wno-psabi)
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L /usr/aarch64-linux-gnu)
# Libraries and headers of the target in its sysroot; Catch2 (header-only in Debian 12) from
# the host, where its CMake package lives.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
