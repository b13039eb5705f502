#include "core/csv.hpp"

namespace kappasim {

std::string csv_field(const std::string& s) {
  const bool edge_space = !s.empty() && (s.front() == ' ' || s.back() == ' ');
  if (!edge_space && s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace kappasim
