// parse_all_presets: parses every registered preset now (core/config.cpp), so that the point
// runners a sweep or a capacity search forks inherit them parsed instead of each parsing its
// model, system and GPU presets again (issue 24: yaml-cpp was 4-9% of a short point's CPU). The
// input log (inputs.txt) is left as it was; a preset that does not parse is left unparsed, and
// the run that names it reports the error as before.
#pragma once

namespace kappasim {
void parse_all_presets();
}  // namespace kappasim
