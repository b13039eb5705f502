// The sweep kinds the application registers (sweeps/point_kind.hpp). Each lives in its own
// file; register_builtin_kinds() (apps/kappasim/sweep_kinds.cpp) calls them all.
#pragma once

#include "sweeps/point_kind.hpp"

namespace kappasim::cli {

// isolated, kappa-crit (apps/kappasim/kind_measure.cpp)
void register_measure_kinds(sweep::KindRegistry& r);
// design (apps/kappasim/kind_design.cpp)
void register_design_kind(sweep::KindRegistry& r);
// cluster (apps/kappasim/kind_cluster.cpp)
void register_cluster_kind(sweep::KindRegistry& r);

}  // namespace kappasim::cli
