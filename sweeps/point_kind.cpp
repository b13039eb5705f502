#include "sweeps/point_kind.hpp"

namespace kappasim::sweep {

KindRegistry& kinds() {
  static KindRegistry registry;
  return registry;
}

}  // namespace kappasim::sweep
