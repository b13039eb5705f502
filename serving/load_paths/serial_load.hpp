// The load-then-compute algorithm the kernel and block_dma paths share: the stack's in-step CPU,
// the step's host copies on every GPU (copy kernel or DMA) alongside the GPU-side buffer's
// copies, the GPU gaps between chunks and the CPU that issues the copies if it outlasts them;
// then the step's compute. kernel.cpp and block_dma.cpp choose the copy mechanism and count.
#pragma once

#include <string>

#include "serving/load_paths/load_path.hpp"

namespace kappasim {

class SerialLoadPath : public LoadPathStrategy {
 public:
  SerialLoadPath(std::string name, LoadPath path, CopyPath copy)
      : m_name(std::move(name)), m_path(path), m_copy(copy) {}
  std::string name() const override { return m_name; }
  CopyPath copy_path() const override { return m_copy; }
  double run(LoadContext& ctx, const LoadSplit& ls, std::int64_t requests,
             const StepTime& compute) override;
  bool loads_outside_steps() const override { return true; }

 protected:
  // Copies (DMA) or blocks (copy kernel) the step's link part costs per rank.
  virtual std::int64_t copy_units(const LoadSplit& ls, const RetrieveCost& link) const = 0;

 private:
  std::string m_name;
  LoadPath m_path;
  CopyPath m_copy;
};

}  // namespace kappasim
