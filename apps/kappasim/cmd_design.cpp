// kappasim design emit: one split of the area/power design model (models/design) written out as
// presets the simulator reads (models/design/design_emit.hpp, docs/design-model.md "Emitting a
// design point"):
//   kappasim design emit --budget area --link-fraction 0.1 --sram-fraction 0 [--host gb200]
//                        [--coefficients h100-4n] [--base h100-sxm5] [--name N] [--out DIR]
// With --out DIR: DIR/gpus/<name>.yaml, DIR/systems/<name>-<host>.yaml and
// DIR/serving/<name>.kv_buffer.yaml (then `kappasim run CFG --preset-dir DIR` with
// `system: <name>-<host>` and the kv_buffer map under serving:). Without --out: the GPU preset
// on stdout. Every check runs before anything is written; the files are written atomically.
#include <filesystem>
#include <iostream>

#include "apps/kappasim/cli.hpp"
#include "core/output.hpp"
#include "core/units.hpp"
#include "models/design/design_emit.hpp"

namespace kappasim::cli {

namespace fs = std::filesystem;

namespace {

double fraction_option(const std::string& option, const std::string& text) {
  double v = 0;
  try {
    v = parse_quantity_as(text, dim::none);
  } catch (const UnitError& e) {
    throw InputError("--" + option + ": " + e.what());
  }
  if (!(v >= 0 && v <= 1))
    throw InputError("--" + option +
                     ": expected a fraction of the movable budget between 0 and 1, got \"" + text +
                     "\"");
  return v;
}

}  // namespace

int cmd_design(const std::string& verb, const std::vector<std::string>& args) {
  if (verb != "emit")
    throw InputError("kappasim design: expected emit" +
                     (verb.empty() ? std::string() : ", got '" + verb + "'"));
  std::string budget, link, sram, compute, coefficients = "h100-4n", out;
  DesignEmitOptions o;
  std::vector<std::string> preset_dirs;
  bool force = false;
  po::options_description desc(
      "kappasim design emit: one split of the area/power design model (docs/design-model.md) as\n"
      "a GPU preset, a system preset and the serving kv_buffer settings for `run`, `measure`, "
      "`sweep`.\n"
      "Usage: kappasim design emit --budget area|power --link-fraction F [--sram-fraction S]\n"
      "       [--compute-fraction C] [--host dgx-h100|gb200|unlimited|SYSTEM] [--out "
      "DIR]\nOptions");
  desc.add_options()("budget", po::value(&budget),
                     "area (fractions of the movable die area) or power (of the movable power)")(
      "link-fraction", po::value(&link), "fraction of the movable budget on host-link PHY (> 0)")(
      "sram-fraction", po::value(&sram), "fraction on KV SRAM (default 0)")(
      "compute-fraction", po::value(&compute), "fraction on tensor compute (default: the rest)")(
      "coefficients", po::value(&coefficients),
      "design preset: base die and per-unit costs (default h100-4n)")(
      "base", po::value(&o.base_gpu), "GPU preset the die is a re-split of (default h100-sxm5)")(
      "host", po::value(&o.host),
      "host of the emitted system: dgx-h100 (default), gb200, unlimited, or a system preset with a "
      "PCIe link")("gpus", po::value(&o.gpus),
                   "GPUs of the emitted system for the gb200 and unlimited hosts (default 8)")(
      "name", po::value(&o.name), "preset name (default <coefficients>-<budget>-l<link>-s<sram>)")(
      "out,o", po::value(&out),
      "preset folder to write (gpus/, systems/, serving/); default: the GPU preset on stdout")(
      "preset-dir", po::value(&preset_dirs)->composing(), "extra preset folder")(
      "force", po::bool_switch(&force),
      "write into --out even if it is a non-empty folder kappasim did not write")("help,h",
                                                                                  "this help");
  auto vm = parse("design emit", args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  add_preset_dirs(preset_dirs);
  DesignSplit s;
  if (budget == "area")
    s.mode = BudgetMode::Area;
  else if (budget == "power")
    s.mode = BudgetMode::Power;
  else
    throw InputError("--budget: expected area or power" +
                     (budget.empty() ? std::string(" (required)") : ", got \"" + budget + "\""));
  if (link.empty()) throw InputError("--link-fraction: required (the host-link PHY's share, > 0)");
  s.link_fraction = fraction_option("link-fraction", link);
  if (!sram.empty()) s.sram_fraction = fraction_option("sram-fraction", sram);
  if (!compute.empty()) s.compute_fraction = fraction_option("compute-fraction", compute);
  const double sum = s.link_fraction + s.sram_fraction.value_or(0) + s.compute_fraction.value_or(0);
  if (sum > 1 + 1e-12)
    throw InputError("--link-fraction, --sram-fraction, --compute-fraction: add up to " +
                     format_number(sum) + ", more than the whole budget (1)");
  if (!(s.link_fraction > 0))
    throw InputError("--link-fraction: must be greater than 0 (a design needs a host link)");
  if (s.fractions()[0] <= 0)
    throw InputError(
        "--compute-fraction: compute gets nothing; leave some of the budget to compute");
  if (!(o.gpus >= 1)) throw InputError("--gpus: must be at least 1");
  if (!PresetRegistry::instance().find("design", coefficients))
    throw InputError("--coefficients: unknown design preset '" + coefficients +
                     "' (kappasim presets list)");
  const DesignCoefficients c = read_preset_config<DesignCoefficients>(
      ConfigNode::make_scalar(coefficients), "design", "--coefficients", nullptr);
  o.coefficients_name = coefficients;
  const EmittedDesign e = emit_design(c, s, o);  // InputError before anything is written

  const std::string header =
      "# Emitted by kappasim design emit (models/design/design_emit.hpp): " + e.name + "\n";
  if (out.empty()) {
    std::cout << header << emit_yaml(e.gpu);
    return 0;
  }
  const fs::path dir(out);
  // Like every command that writes a folder (core/output.hpp): a non-empty folder without the
  // kappasim marker is the user's and is refused unless --force; the folder keeps the marker so
  // further designs can be emitted into it. Each file is written atomically; on a failure the
  // folders this call created are removed again, so nothing is left half-made.
  std::error_code ec;
  const bool existed = fs::exists(dir, ec);
  claim_output_dir(out, force);
  std::vector<fs::path> made;
  try {
    for (const char* sub : {"gpus", "systems", "serving"}) {
      if (fs::exists(dir / sub, ec)) continue;
      fs::create_directories(dir / sub, ec);
      if (ec)
        throw InputError("--out: cannot create " + (dir / sub).string() + ": " + ec.message());
      made.push_back(dir / sub);
    }
    write_file_atomic((dir / "gpus" / (e.name + ".yaml")).string(), header + emit_yaml(e.gpu));
    write_file_atomic((dir / "systems" / (e.system_name + ".yaml")).string(),
                      header + emit_yaml(e.system));
    write_file_atomic(
        (dir / "serving" / (e.name + ".kv_buffer.yaml")).string(),
        header + "# serving.kv_buffer settings for this design (put under serving: kv_buffer:)\n" +
            emit_yaml(e.kv_buffer));
  } catch (...) {
    for (const fs::path& p : made) fs::remove_all(p, ec);
    if (!existed) fs::remove_all(dir, ec);
    throw;
  }
  std::cout << "gpu preset:    " << (dir / "gpus" / (e.name + ".yaml")).string() << "\n"
            << "system preset: " << (dir / "systems" / (e.system_name + ".yaml")).string() << "\n"
            << "kv_buffer:     " << (dir / "serving" / (e.name + ".kv_buffer.yaml")).string()
            << "\n"
            << "use: kappasim run CONFIG --preset-dir " << out << " --set system=" << e.system_name
            << "\n";
  return 0;
}

}  // namespace kappasim::cli
