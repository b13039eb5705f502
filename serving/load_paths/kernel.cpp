// kernel: LMCache's default load: a copy kernel on the GPU's SMs reads pinned host memory
// (zero-copy) before the forward pass (LMCache's retrieve blocks the step). One kernel block per
// chunk over the link (CopyKernel's per-block cost, models/gpu/copy_engine).
#include "serving/load_paths/registry.hpp"
#include "serving/load_paths/serial_load.hpp"

namespace kappasim {

namespace {
class KernelLoadPath : public SerialLoadPath {
 public:
  KernelLoadPath()
      : SerialLoadPath("kernel", LoadPath::Kernel, load_path_costs(LoadPath::Kernel).copy) {}

 protected:
  std::int64_t copy_units(const LoadSplit& ls, const RetrieveCost&) const override {
    return ls.link_chunks;
  }
};
}  // namespace

std::unique_ptr<LoadPathStrategy> make_kernel_load_path() {
  return std::make_unique<KernelLoadPath>();
}

}  // namespace kappasim
