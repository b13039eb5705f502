#include "serving/run_spec.hpp"

namespace kappasim {

void RunSpec::validate(const std::string& path) const {
  if (serving.tp > system.gpus)
    throw InputError(path + "serving.tp: tensor parallelism " + std::to_string(serving.tp) +
                     " exceeds the " + std::to_string(system.gpus) + " GPUs of system '" +
                     system.name + "'");
  system.gpu.peak(serving.compute_dtype);
}

}  // namespace kappasim
