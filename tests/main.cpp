// The doctest runner of `swp-tests`; every test file registers its cases with it.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
