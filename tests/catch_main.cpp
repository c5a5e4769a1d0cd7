// Catch2 v2 needs one translation unit to define main(); v3 links Catch2WithMain instead.
#define CATCH_CONFIG_MAIN
#include "catch.h"
