// One sweep point in this process (sweeps/runner/runner.hpp run_point; `kappasim sweep point`):
// the kind from the registry, its extra files staged and moved into place whole, then
// inputs.txt and result.json, each atomically. Moved out of apps/kappasim/cmd_sweep.cpp.
#include <unistd.h>

#include <cstdlib>

#include "core/output.hpp"
#include "sweeps/runner/runner.hpp"
#include "sweeps/runner/runner_internal.hpp"

namespace kappasim::sweep {

namespace {

// ---- inputs.txt: the content of every preset and file a point read (issue 12.11) ----------
// One line per input, "<16 hex content hash> <key>" (core/config input_log keys: "preset KIND
// NAME" or "file /abs/path"), written by the point before result.json.
std::string inputs_text() {
  std::string out =
      "# kappasim sweep point: content hash of every preset and preset file it read\n";
  for (const auto& [key, hash] : input_log()) out += hash + " " + key + "\n";
  return out;
}

}  // namespace

void run_point(const PointRunOptions& o) {
  const PointKind& k = find_kind(o.kind);
  // Nothing this point writes is fsynced (issue 24: a point's files and records were ~9,600
  // fsyncs of `reproduce`, ~6 s of its wall on 2 cores; a capacity point's probes write sweeps
  // of their own). A killed runner loses none of it (the page cache outlives the processes).
  set_fsync_writes(false);
  for (const auto& pd : o.preset_dirs) PresetRegistry::instance().add_directory(pd);
  // A kind that starts processes of its own (capacity: its probes are sweep points) passes the
  // --preset-dir folders on through KAPPASIM_PRESET_PATH, which every kappasim process reads.
  if (!o.preset_dirs.empty()) {
    const char* env = std::getenv("KAPPASIM_PRESET_PATH");
    std::string path = env ? env : "";
    for (const auto& pd : o.preset_dirs)
      path += (path.empty() ? "" : ":") + fs::absolute(pd).lexically_normal().string();
    ::setenv("KAPPASIM_PRESET_PATH", path.c_str(), 1);
  }
  const ConfigNode node = load_yaml_file(o.config);
  clear_input_log();  // from here on: what the point itself reads

  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) throw IoError("--out: cannot create '" + o.out + "': " + ec.message());
  // The kind's extra files go to a staging folder moved into place before result.json (none
  // for a kind that writes no files: PointKind::files).
  const std::string staging = o.out + "/files.partial-" + std::to_string(::getpid());
  if (k.files) {
    fs::remove_all(staging, ec);
    fs::create_directory(staging, ec);
    if (ec) throw IoError("--out: cannot create '" + staging + "': " + ec.message());
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code e;
      if (!dir.empty()) fs::remove_all(dir, e);
    }
  } cleanup{k.files ? staging : std::string()};
  PointContext ctx;
  ctx.base_dir = o.base_dir;
  ctx.out_dir = staging;
  ctx.seed = o.seed;
  const PointResult result = k.run(node, ctx);
  check_declared(k, result);
  fs::remove_all(o.out + "/files", ec);
  if (k.files && !fs::is_empty(staging, ec)) {
    fs::rename(staging, o.out + "/files", ec);
    if (ec)
      throw IoError("cannot move '" + staging + "' to '" + o.out + "/files': " + ec.message());
    cleanup.dir.clear();
  }
  // Not fsynced (above): a result.json an OS crash left empty or cut short reads as damaged, and
  // the resumed sweep runs the point again.
  write_file_replace(o.out + "/inputs.txt", inputs_text());
  write_file_replace(o.out + "/result.json", result_json(result));
}

}  // namespace kappasim::sweep
