// CSV fields as RFC 4180 writes them: the one quoter every CSV kappasim writes goes through
// (requests.csv, Table::csv, the sweep's results.csv / aggregate.csv / `sweep points`).
// A field is written as is unless it holds a comma, a double quote, CR or LF, or starts or ends
// with a space; then it is enclosed in double quotes and each double quote inside is doubled.
// The leading/trailing-space rule goes beyond RFC 4180's minimum (which keeps spaces as part of
// an unquoted field) because common readers trim unquoted fields; quoting any field is allowed
// by the RFC, so the output stays valid RFC 4180 either way. Ignores: line endings (kappasim
// writes LF records, which RFC-4180 readers accept), text encodings (bytes pass through).
#pragma once

#include <string>

namespace kappasim {

std::string csv_field(const std::string& s);

}  // namespace kappasim
