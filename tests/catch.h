// catch.h — include this instead of Catch2 directly: it works with Catch2 v2 (Debian 12's
// single header) and v3 (Ubuntu 24.04, Homebrew).
#pragma once
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
using Catch::Approx;  // v2 has Approx at global scope; v3 only in namespace Catch
#else
#include <catch2/catch.hpp>
#endif
