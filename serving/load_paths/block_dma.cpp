// block_dma: vLLM's native OffloadingConnector: cudaMemcpyAsync of 16-token blocks contiguous
// across layers (or one per block, layer and K/V, as the stack's copy_unit says), before the
// request computes. Simplification: the load is part of the step in which the request is first
// scheduled; vLLM overlaps it with other requests' steps.
#include "serving/load_paths/registry.hpp"
#include "serving/load_paths/serial_load.hpp"

namespace kappasim {

namespace {
class BlockDmaLoadPath : public SerialLoadPath {
 public:
  BlockDmaLoadPath()
      : SerialLoadPath("block_dma", LoadPath::BlockDma, load_path_costs(LoadPath::BlockDma).copy) {}

 protected:
  std::int64_t copy_units(const LoadSplit&, const RetrieveCost& link) const override {
    return link.copies;
  }
};
}  // namespace

std::unique_ptr<LoadPathStrategy> make_block_dma_load_path() {
  return std::make_unique<BlockDmaLoadPath>();
}

}  // namespace kappasim
