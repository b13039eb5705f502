#include "systems/system_spec.hpp"

namespace kappasim {

void SystemSpec::validate(const std::string& path) const {
  if (gpus_sharing_host_link > gpus)
    throw InputError(path + ".gpus_sharing_host_link: " + std::to_string(gpus_sharing_host_link) +
                     " GPUs cannot share a link in a system of " + std::to_string(gpus));
}

}  // namespace kappasim
