// A test hook (issue 26.5): how many map entries ConfigNode's linear key searches (find, set)
// have visited in this process. Parsing and reading a map of n keys must visit O(n) entries,
// not O(n^2) (tests/unit/config_test.cpp); the parser's duplicate check and merges are indexed.
#pragma once

#include <cstdint>

namespace kappasim {

std::uint64_t config_key_visits();

}  // namespace kappasim
