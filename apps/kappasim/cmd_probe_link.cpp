// kappasim probe h2d|d2h|bidir: host<->GPU copy bandwidth curves from the SystemC flow model,
// measured the way the vLLM blog measured its H100 curves (reference-data.md): per block size,
// one transfer of `blocks` blocks (DMA: that many cudaMemcpyAsync back to back on one stream;
// kernel: one copy kernel over all blocks), timed from the first start to the last end.
// The simulation is serving/probes.cpp (run_link_probe); this file parses, checks and prints.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>
#include <utility>

#include "apps/kappasim/cli.hpp"
#include "core/table.hpp"
#include "core/units.hpp"
#include "interconnects/pcie_protocol.hpp"
#include "serving/probes.hpp"
#include "systems/topology.hpp"

namespace kappasim::cli {

namespace {}  // namespace

int cmd_probe_link(const std::string& verb, const std::vector<std::string>& args) {
  std::string system_ref = "h100", path = "dma",
              sizes_text = "4 KiB,16 KiB,64 KiB,256 KiB,1 MiB,4 MiB,16 MiB", format = "table";
  std::vector<std::string> sets, preset_dirs;
  int blocks = 1000, gpus = 1;
  bool pageable = false;
  std::string load_width;
  int threads_per_block = 0, blocks_per_sm = 0, loads_per_thread = 1;
  po::options_description desc(
      "kappasim probe " + verb +
      ": host<->GPU copy bandwidth per block size from the flow-level SystemC model\n"
      "(as the vLLM blog measured: one transfer of --blocks blocks of each size; DMA = that many\n"
      "cudaMemcpyAsync back to back on one stream, kernel = one copy kernel over all blocks;\n"
      "bidir = an H2D and a D2H stream per GPU at once)\n"
      "Usage: kappasim probe " +
      verb + " [--system S] [options]\nOptions");
  desc.add_options()("system,s", po::value(&system_ref),
                     "system preset name or YAML file (default h100)")(
      "set", po::value(&sets)->composing(),
      "override a system key: --set system.gpus_per_socket=4")(
      "preset-dir", po::value(&preset_dirs)->composing(), "extra preset folder")(
      "path", po::value(&path),
      "dma (cudaMemcpyAsync on copy engines, default) or kernel (SM copy kernel, zero-copy)")(
      "sizes", po::value(&sizes_text),
      "comma-separated block sizes (default \"4 KiB,16 KiB,64 KiB,256 KiB,1 MiB,4 MiB,16 MiB\")")(
      "blocks", po::value(&blocks), "blocks per transfer (default 1000)")(
      "gpus", po::value(&gpus), "GPUs copying at once (default 1, at most the system's GPUs)")(
      "pageable", po::bool_switch(&pageable),
      "pageable host memory (staged by the driver) instead of pinned")(
      "load-width", po::value(&load_width),
      "kernel path: bytes one thread loads per instruction (1-16 B); with --threads-per-block "
      "and --blocks-per-sm it bounds the reads by the loads in flight (docs/pcie-model.md); "
      "without them only the read tags and the wire do")(
      "threads-per-block", po::value(&threads_per_block), "kernel path: threads per block")(
      "blocks-per-sm", po::value(&blocks_per_sm),
      "kernel path: blocks the grid offers each SM (grid / SMs; occupancy clamps it)")(
      "loads-per-thread", po::value(&loads_per_thread),
      "kernel path: independent loads a thread keeps in flight (default 1)")(
      "format", po::value(&format), "table, csv or json")("help,h", "this help");
  auto vm = parse("probe " + verb, args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  // Every input is checked before the simulation starts.
  add_preset_dirs(preset_dirs);
  const Format fmt = parse_format(format);
  if (path != "dma" && path != "kernel")
    throw InputError("--path: expected dma or kernel, got '" + path + "'");
  const bool use_dma = path == "dma";
  if (pageable && !use_dma)
    throw InputError(
        "--pageable: a copy kernel reads pinned (mapped) host memory only; use --path dma");
  CopyKernelShape kernel;
  if (!load_width.empty()) {
    try {
      kernel.load_width = parse_quantity_as(load_width, dim::bytes);
    } catch (const UnitError& err) {
      throw InputError("--load-width: " + std::string(err.what()));
    }
  }
  if (vm.count("threads-per-block")) {
    if (threads_per_block < 1 || threads_per_block > 1024)
      throw InputError("--threads-per-block: expected 1 to 1024, got " +
                       std::to_string(threads_per_block));
    kernel.threads_per_block = threads_per_block;
  }
  if (vm.count("blocks-per-sm")) {
    if (blocks_per_sm < 1)
      throw InputError("--blocks-per-sm: expected at least 1, got " +
                       std::to_string(blocks_per_sm));
    kernel.blocks_per_sm = blocks_per_sm;
  }
  if (loads_per_thread < 1)
    throw InputError("--loads-per-thread: expected at least 1, got " +
                     std::to_string(loads_per_thread));
  kernel.loads_per_thread = loads_per_thread;
  if (use_dma && (kernel.load_width || kernel.threads_per_block || kernel.blocks_per_sm))
    throw InputError(
        "--load-width, --threads-per-block, --blocks-per-sm: kernel options need "
        "--path kernel");
  {
    std::string why;
    try {
      kernel.validate("kernel");
    } catch (const InputError& e) {
      why = e.what();
    }
    if (!why.empty())
      throw InputError("--load-width, --threads-per-block, --blocks-per-sm: " + why);
  }
  const std::vector<double> sizes = parse_sizes(sizes_text);
  if (blocks < 1 || blocks > 10000000)
    throw InputError("--blocks: expected 1 to 10000000, got " + std::to_string(blocks));
  const LoadedSystem loaded = load_system(system_ref, sets);
  const SystemSpec& sys = loaded.system;
  if (gpus < 1 || gpus > sys.gpus)
    throw InputError("--gpus: expected 1 to " + std::to_string(sys.gpus) + " (system '" + sys.name +
                     "'), got " + std::to_string(gpus));
  Topology topo = build_topology(sys);  // InputError naming any missing simulator field
  {
    // Bounded before simulating: every size runs in turn in one simulation.
    double bytes = 0;
    for (double s : sizes) bytes += s * blocks * gpus;
    // Issue 26.15: at the rate the chosen path can reach, not the link's peak: a copy kernel's
    // SM reads are bounded by the loads its SMs keep in flight, and every read by the request
    // tags (Little's law, interconnects/pcie_protocol.hpp), so its probe lasts longer.
    double rate = sys.host_link.per_direction_bandwidth();
    std::string rate_what = "the host link's peak";
    if (sys.host_link.type == LinkType::Pcie) {
      const PcieProtocol p = PcieProtocol::from(sys.host_link, "system.host_link");
      for (Direction d : verb == "h2d"   ? std::vector<Direction>{Direction::H2D}
                         : verb == "d2h" ? std::vector<Direction>{Direction::D2H}
                                         : std::vector<Direction>{Direction::H2D, Direction::D2H}) {
        const PcieOp op = pcie_op(d == Direction::H2D, use_dma);
        double r = std::min(payload_bandwidth(p, op), read_tag_limit_Bps(p, op));
        // The kernel's own loads in flight, on every SM (its launch shape; none given: none).
        const double inflight = copy_kernel_inflight_bytes(kernel, sys.gpu, sys.gpu.sm_count);
        if (!use_dma && d == Direction::H2D && inflight > 0)
          r = std::min(r, little_rate_Bps(inflight, p.round_trip_latency_s));
        rate = std::min(rate, r);
      }
      rate_what = std::string("the ") + (use_dma ? "DMA" : "copy kernel") + " path's rate";
    }
    const double est_s = rate > 0 ? bytes / rate : 0;
    if (!(est_s <= kMaxProbeSimTimeS))
      throw InputError("--sizes × --blocks × --gpus: " + format_quantity(bytes, dim::bytes) +
                       " in all would take " + probe_estimate(est_s) + " s of simulated time at " +
                       rate_what + " (" + format_quantity_approx(rate, dim::bandwidth, 4) +
                       "); a probe may ask for at most " + format_number(kMaxProbeSimTimeS) +
                       " s (docs/bad-inputs.md): use fewer or smaller blocks");
  }

  std::vector<Direction> dirs;
  if (verb == "h2d")
    dirs = {Direction::H2D};
  else if (verb == "d2h")
    dirs = {Direction::D2H};
  else
    dirs = {Direction::H2D, Direction::D2H};

  // Issue 26.15: a long probe says so before it starts. DMA simulates each block's copy (per
  // GPU, size and direction); a copy kernel one transfer per size. kProbeCopiesPerWallSecond:
  // measured, see below.
  {
    // Measured (issue 26) on the 2-core build VM while other builds ran: `probe h2d --system
    // h100 --gpus 8 --blocks 2000` (112,000 DMA copies) 2.2 s, `--gpus 1 --blocks 20000`
    // (140,000) 3.1 s, `--gpus 8 --blocks 20000` (1.12 million) 18 s: about 60,000 copies per
    // wall second (an order of magnitude for the note, not a promise).
    constexpr double kProbeCopiesPerWallSecond = 6e4;
    const double copies = use_dma ? static_cast<double>(blocks) * gpus * sizes.size() * dirs.size()
                                  : static_cast<double>(gpus) * sizes.size() * dirs.size();
    const double wall_s = copies / kProbeCopiesPerWallSecond;
    if (wall_s >= 10)
      std::cerr << "kappasim: note: " << format_number(copies)
                << " copies to simulate (--blocks × --gpus × sizes × directions): roughly "
                << format_number(std::round(wall_s))
                << " s of wall time; fewer --blocks give the same bandwidth curve\n";
  }
  LinkProbeOptions opts{sys,  std::move(topo), sizes,     dirs,  blocks,
                        gpus, use_dma,         !pageable, kernel};
  const LinkProbeResult result = run_link_probe(std::move(opts));

  Table table({"size_bytes", "time_s", "bandwidth_bytes_per_s", "aggregate_bytes_per_s", "gpus",
               "path", "direction", "pinned", "blocks", "fabric_events_per_transfer", "system",
               "fidelity"});
  const double streams = static_cast<double>(gpus) * static_cast<double>(dirs.size());
  for (const LinkProbePhase& p : result.phases) {
    const double per = p.time_s > 0 ? blocks * p.size / p.time_s : 0.0;
    table.add_row({p.size, p.time_s, per, per * streams, static_cast<std::int64_t>(gpus), path,
                   verb, !pageable, static_cast<std::int64_t>(blocks),
                   p.transfers > 0 ? p.events / p.transfers : 0.0, sys.name, result.fidelity});
  }
  std::cout << table.render(fmt);
  return 0;
}

}  // namespace kappasim::cli
