// Precompiled for every file of the CLI (src/cli/meson.build). CLI11 2.1 (Debian 12's) is
// header-only and defines its validators per translation unit: parsing it is most of what a
// CLI file costs to compile, in each of them. A file still includes what it uses itself
// (builds with -Db_pch=false must compile).
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
