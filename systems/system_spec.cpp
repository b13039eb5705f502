#include "systems/system_spec.hpp"

namespace kappasim {

void SystemSpec::validate(const std::string& path) const {
  if (gpus_sharing_host_link > gpus)
    throw InputError(path + ".gpus_sharing_host_link: " + std::to_string(gpus_sharing_host_link) +
                     " GPUs cannot share a link in a system of " + std::to_string(gpus));
  if (gpus_per_socket > 0 && (gpus + gpus_per_socket - 1) / gpus_per_socket > host_memory.sockets)
    throw InputError(path + ".gpus_per_socket: " + std::to_string(gpus) + " GPUs at " +
                     std::to_string(gpus_per_socket) + " per socket need more than the " +
                     std::to_string(host_memory.sockets) + " sockets of the host");
}

}  // namespace kappasim
