// Evaluating a metric at overridden configs for the analysis commands (see evaluate.hpp).
#include "analysis/evaluate.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "analysis/parameters.hpp"
#include "core/output.hpp"
#include "core/units.hpp"
#include "interconnects/pcie_widths.hpp"
#include "sweeps/point_kind.hpp"
#include "sweeps/runner/runner.hpp"
#include "sweeps/sweep_results.hpp"
#include "sweeps/sweep_spec.hpp"

extern char** environ;

namespace kappasim::analysis {

namespace {

std::string top_key(const std::string& dotted) { return dotted.substr(0, dotted.find('.')); }

// {model, system, serving: {tp, kv_dtype}, precision, K, T} from a run config (kind kappa).
ConfigNode to_kappa_config(const ConfigNode& run) {
  ConfigNode out = ConfigNode::make_map(run.loc);
  for (const char* k : {"model", "system", "precision", "K", "T"})
    if (const ConfigNode* n = run.find(k)) out.set(k, *n);
  if (const ConfigNode* s = run.find("serving"); s && s->is_map()) {
    ConfigNode sv = ConfigNode::make_map(s->loc);
    for (const char* k : {"tp", "kv_dtype"})
      if (const ConfigNode* n = s->find(k)) sv.set(k, *n);
    if (!sv.entries.empty()) out.set("serving", sv);
    if (!run.find("precision"))
      if (const ConfigNode* d = s->find("compute_dtype")) out.set("precision", *d);
  }
  return out;
}

}  // namespace

ConfigEvaluator::ConfigEvaluator(const std::string& config_path,
                                 const std::vector<std::string>& sets, std::string kind,
                                 bool analytic, std::string work_dir, int jobs,
                                 std::vector<std::string> preset_dirs)
    : m_kind(analytic ? "kappa" : std::move(kind)),
      m_work(std::move(work_dir)),
      m_preset_dirs(std::move(preset_dirs)),
      m_analytic(analytic),
      m_jobs(jobs) {
  if (!sweep::kinds().find(m_kind))
    throw InputError("--kind '" + m_kind + "': unknown point kind; expected one of " + [] {
      std::string all;
      for (const auto& n : sweep::kinds().names()) all += (all.empty() ? "" : ", ") + n;
      return all;
    }());
  m_base = load_yaml_file(config_path);
  if (!m_base.is_map()) throw InputError(m_base.loc, "expected a config map (model, system, ...)");
  for (const auto& s : sets) apply_set(m_base, s);
  // A bare file name has no parent ("base.yaml" -> ""), and absolute("") is an error (issue 26
  // item 1): its folder is the current one.
  const std::filesystem::path parent = std::filesystem::path(config_path).parent_path();
  init_base(std::filesystem::absolute(parent.empty() ? std::filesystem::path(".") : parent)
                .lexically_normal()
                .string());
}

ConfigEvaluator::ConfigEvaluator(ConfigNode base, std::string base_dir, std::string kind,
                                 std::string work_dir, int jobs,
                                 std::vector<std::string> preset_dirs)
    : m_base(std::move(base)),
      m_kind(std::move(kind)),
      m_work(std::move(work_dir)),
      m_preset_dirs(std::move(preset_dirs)),
      m_analytic(false),
      m_jobs(jobs) {
  if (!sweep::kinds().find(m_kind))
    throw std::logic_error("ConfigEvaluator: unknown point kind '" + m_kind + "'");
  if (!m_base.is_map()) throw InputError(m_base.loc, "expected a config map (model, system, ...)");
  init_base(base_dir);
}

void ConfigEvaluator::init_base(const std::string& base_dir) {
  m_base_dir = base_dir;
  if (m_base_dir.size() > 1 && m_base_dir.back() == '/') m_base_dir.pop_back();
  // Relative trace paths are relative to the config's folder; the sweep spec lives elsewhere.
  if (ConfigNode* w = m_base.find("workload"); w && w->is_map())
    if (ConfigNode* t = w->find("trace"); t && t->is_map())
      if (ConfigNode* p = t->find("path");
          p && p->is_scalar() && !p->scalar.empty() && p->scalar[0] != '/')
        p->scalar = m_base_dir + "/" + p->scalar;
  if (const ConfigNode* w = m_base.find("workload"); w && w->is_map())
    if (const ConfigNode* s = w->find("seed");
        s && s->is_scalar() && !s->scalar.empty() &&
        s->scalar.find_first_not_of("0123456789") == std::string::npos && s->scalar.size() < 20)
      m_seed = std::stoull(s->scalar);
  if (m_analytic) m_base = to_kappa_config(m_base);
}

std::vector<EvalResult> ConfigEvaluator::evaluate(const std::vector<Overrides>& points) {
  std::vector<EvalResult> out(points.size());
  if (points.empty()) return out;
  m_runs += static_cast<int>(points.size());
  if (m_analytic) {
    const sweep::PointKind* k = sweep::kinds().find(m_kind);
    for (std::size_t i = 0; i < points.size(); ++i) {
      ConfigNode c = m_base;
      for (const auto& [key, v] : points[i]) {
        // Keys the analytic model does not read (serving costs, the workload) do not reach it:
        // it is unmoved by them, which a tornado shows as a zero swing.
        const std::string top = top_key(key);
        const bool seen = top == "model" || top == "system" || top == "precision" || top == "K" ||
                          top == "T" || key == "serving.tp" || key == "serving.kv_dtype";
        // Located like a --set (issue 26 item 9: a message read "<input>: ..."): the override.
        if (seen)
          sweep::set_path(c, key,
                          ConfigNode::make_scalar(v, SourceLoc{"override " + key + "=" + v, 0, 0}));
      }
      sweep::PointContext ctx;
      ctx.base_dir = m_base_dir;
      ctx.out_dir = m_work;
      ctx.seed = m_seed;
      try {
        const sweep::PointResult r = k->run(c, ctx);
        sweep::check_declared(*k, r);
        for (const auto& [name, v] : r.metrics) out[i].metrics[name] = v;
        out[i].ok = true;
      } catch (const InputError& e) {
        out[i].error = e.what();
      }
    }
    return out;
  }
  // One sweep: a zip axis over the touched top-level keys, each value the subtree with the
  // point's overrides applied.
  std::set<std::string> tops;
  for (const auto& p : points)
    for (const auto& kv : p) tops.insert(top_key(kv.first));
  if (tops.empty()) tops.insert(m_base.entries.empty() ? "model" : m_base.entries.front().first);
  ConfigNode spec = ConfigNode::make_map();
  spec.set("name", ConfigNode::make_scalar("analysis"));
  spec.set("kind", ConfigNode::make_scalar(m_kind));
  spec.set("seed", ConfigNode::make_scalar(std::to_string(m_seed)));
  spec.set("config", m_base);
  ConfigNode zip;
  zip.kind = ConfigNode::Kind::Seq;
  for (const auto& top : tops) {
    ConfigNode ax = ConfigNode::make_map();
    ax.set("key", ConfigNode::make_scalar(top));
    ConfigNode values, labels;
    values.kind = labels.kind = ConfigNode::Kind::Seq;
    for (std::size_t i = 0; i < points.size(); ++i) {
      ConfigNode c = m_base;
      for (const auto& [key, v] : points[i])
        if (top_key(key) == top) sweep::set_path(c, key, ConfigNode::make_scalar(v));
      const ConfigNode* sub = c.find(top);
      values.items.push_back(sub ? *sub : ConfigNode{});
      labels.items.push_back(ConfigNode::make_scalar("p" + std::to_string(i)));
    }
    ax.set("values", values);
    ax.set("labels", labels);
    zip.items.push_back(ax);
  }
  // Each point runs at its own workload.seed, the config's (or the point's override), as
  // `kappasim run CONFIG` does (issue 26 items 8, 10): an axis on workload.seed is the point's
  // seed (sweeps/sweep_spec expand), where the sweep would otherwise derive one.
  bool seeded = false;
  for (const auto& p : points)
    for (const auto& kv : p) seeded = seeded || kv.first == sweep::kSeedKey;
  if (const ConfigNode* w = m_base.find("workload"); w && w->is_map()) seeded = true;
  if (seeded) {
    ConfigNode ax = ConfigNode::make_map();
    ax.set("key", ConfigNode::make_scalar(sweep::kSeedKey));
    ConfigNode values, labels;
    values.kind = labels.kind = ConfigNode::Kind::Seq;
    for (std::size_t i = 0; i < points.size(); ++i) {
      std::string seed = std::to_string(m_seed);
      for (const auto& [key, v] : points[i])
        if (key == sweep::kSeedKey) seed = v;
      values.items.push_back(ConfigNode::make_scalar(seed));
      labels.items.push_back(ConfigNode::make_scalar("s" + std::to_string(i)));
    }
    ax.set("values", values);
    ax.set("labels", labels);
    zip.items.push_back(ax);
  }
  ConfigNode axis = ConfigNode::make_map();
  axis.set("zip", zip);
  ConfigNode axes;
  axes.kind = ConfigNode::Kind::Seq;
  axes.items.push_back(axis);
  spec.set("axes", axes);
  char name[16];
  std::snprintf(name, sizeof name, "b%04d", ++m_batches);
  const std::string dir = m_work + "/" + name;
  // A batch folder left by an earlier (killed) run of the same command is resumed by the sweep
  // runner (issue 26 item 25); one made for other points (the config changed) is replaced.
  const std::string spec_text =
      "# generated by kappasim (analysis batch)\n" + emit_yaml(spec, false);
  if (std::string old; read_text_file(dir + "/spec.yaml", old) && old != spec_text)
    std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write_file_atomic(dir + "/spec.yaml", spec_text);
  sweep::SweepOptions so;
  so.spec_path = dir + "/spec.yaml";
  so.out_dir = dir + "/sweep";
  so.jobs = m_jobs;
  so.quiet = true;
  so.preset_dirs = m_preset_dirs;
  // Every evaluation runs in a kappasim process that simulates nothing itself (the analysis
  // commands, the capacity point): its points run in forked children of it (issue 24: no exec,
  // dynamic loading and preset registry per probe; the same files and command.txt).
  so.fork_points = true;
  sweep::run_sweep(so);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto rec =
        sweep::read_point_record(so.out_dir + "/points/" + sweep::point_name(i, points.size()));
    if (!rec) {
      out[i].error = "no result";
      continue;
    }
    out[i].ok = rec->status == "ok";
    out[i].error = rec->error;
    out[i].warnings = rec->warnings;
    for (const auto& [m, v] : rec->metrics) out[i].metrics[m] = v ? *v : std::nan("");
  }
  return out;
}

namespace {
void leaf_paths(const ConfigNode& n, const std::string& path, std::vector<std::string>& out) {
  if (n.is_map()) {
    for (const auto& [k, v] : n.entries) leaf_paths(v, path.empty() ? k : path + "." + k, out);
  } else if (n.is_scalar()) {
    out.push_back(path);
  }
}
}  // namespace

KeyInfo check_key(const ConfigNode& effective, const ConfigNode& base, const std::string& key,
                  const std::string& option) {
  const ConfigNode* n = find_path(effective, key);
  if (!n || !n->is_scalar())
    if (const ConfigNode* b = find_path(base, key); b && b->is_scalar()) n = b;
  if (n && !n->is_scalar()) {
    // A section (model, system.gpu, ...): name some of its numeric keys, never the key itself
    // (issue 26 item 9: `--vary model` was told "did you mean 'model'?").
    std::vector<std::string> inside;
    leaf_paths(*n, key, inside);
    std::string some;
    for (std::size_t i = 0; i < inside.size() && i < 3; ++i) some += (i ? ", " : "") + inside[i];
    throw InputError(option + " '" + key + "': a section of the configuration, not a number; " +
                     "vary one numeric key inside it" +
                     (some.empty() ? std::string() : " (e.g. " + some + ")") +
                     " (kappasim run CONFIG --dump-config lists them)");
  }
  if (!n) {
    std::vector<std::string> all;
    leaf_paths(effective, "", all);
    leaf_paths(base, "", all);
    const std::string near = nearest(key, all);
    throw InputError(option + " '" + key + "': no such key in the effective configuration" +
                     (near.empty() ? "" : "; did you mean '" + near + "'?") +
                     " (kappasim run CONFIG --dump-config lists them)");
  }
  KeyInfo k;
  try {
    const Quantity q = parse_quantity(n->scalar);
    k.dim = q.dim;
    k.value = q.value;
  } catch (const UnitError&) {
    throw InputError(option + " '" + key + "': its value '" + n->scalar + "' is not a number");
  }
  k.integer = k.dim == dim::none && std::fabs(k.value - std::round(k.value)) < 1e-12 &&
              n->scalar.find_first_of(".eE") == std::string::npos;
  // A link's lanes: only the widths PCIe defines (an 11-lane probe is refused by the link spec).
  if (k.integer && (key == "lanes" || (key.size() > 6 && key.rfind(".lanes") == key.size() - 6)))
    for (int w : kPcieLinkWidths) k.allowed.push_back(w);
  return k;
}

std::string value_literal(double v, const Dimension& d, bool integer) {
  if (integer) return format_number(std::round(v));
  // 9 significant digits: finer than any search tolerance, and readable ("26.9086853 GB").
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", v);
  v = std::strtod(b, nullptr);
  return d == dim::none ? format_number(v) : format_quantity(v, d);
}

WorkDir::WorkDir(const std::string& staging_runs) {
  if (!staging_runs.empty()) {
    m_path = staging_runs;
  } else {
    m_path = (std::filesystem::temp_directory_path() /
              ("kappasim-analysis-" + std::to_string(::getpid())))
                 .string();
    m_temp = true;
    std::filesystem::remove_all(m_path);
  }
  std::filesystem::create_directories(m_path);
}

WorkDir::~WorkDir() {
  if (m_temp) {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
}

namespace {
CommandRunner g_runner;  // set_command_runner

// `argv` (argv[0] the program) as a forked child of this process running it in place, its stdout
// and stderr in the two files; the child's pid.
pid_t fork_command(const std::vector<std::string>& argv, const std::string& out_path,
                   const std::string& err_path) {
  int fds[3] = {-1, -1, -1};  // stdin, stdout, stderr of the child
  const std::string* paths[3] = {nullptr, &out_path, &err_path};
  for (int i = 0; i < 3; ++i) {
    fds[i] = i == 0 ? ::open("/dev/null", O_RDONLY | O_CLOEXEC)
                    : ::open(paths[i]->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fds[i] < 0) {
      const int e = errno;
      for (int j = 0; j < i; ++j) ::close(fds[j]);
      throw file_error(
          i == 0 ? std::string("cannot open '/dev/null'") : "cannot write '" + *paths[i] + "'", e);
    }
  }
  const int in_fd = fds[0], out_fd = fds[1], err_fd = fds[2];
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  pid_t pid = -1;
  try {
    pid = sweep::fork_tied_child();  // stdio flushed first: nothing buffered is written twice
  } catch (...) {
    for (int fd : {in_fd, out_fd, err_fd}) ::close(fd);
    throw;
  }
  if (pid == 0) {
    ::dup2(in_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    int code = 1;
    try {  // nothing may unwind into the parent's frames this child also holds
      code = g_runner.run(std::move(args));
    } catch (...) {
      std::cerr << "kappasim: error: unexpected exception in a child command\n";
    }
    sweep::exit_child(code);
  }
  for (int fd : {in_fd, out_fd, err_fd}) ::close(fd);
  return pid;
}
}  // namespace

void set_command_runner(CommandRunner runner) { g_runner = runner; }

double run_command_value(const std::vector<std::string>& args, const Overrides& sets,
                         const std::string& pointer, const std::string& work_file,
                         const std::string& what) {
  std::vector<std::string> argv{"/proc/self/exe"};
  argv.insert(argv.end(), args.begin(), args.end());
  for (const auto& [k, v] : sets) {
    argv.push_back("--set");
    argv.push_back(k + "=" + v);
  }
  const std::string out_path = work_file + ".out", err_path = work_file + ".err";
  pid_t pid = 0;
  if (g_runner.run != nullptr && g_runner.may_fork != nullptr && g_runner.may_fork()) {
    pid = fork_command(argv, out_path, err_path);
  } else {
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw std::runtime_error("cannot start kappasim for " + what);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  auto slurp = [](const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  std::string line;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string err = slurp(err_path);
    while (!err.empty() && err.back() == '\n') err.pop_back();
    if (auto p = err.rfind('\n'); p != std::string::npos) err = err.substr(p + 1);
    throw InputError(what + ": `kappasim " +
                     [&] {
                       std::string s;
                       for (std::size_t i = 1; i < argv.size(); ++i)
                         s += (i > 1 ? " " : "") + sweep::shell_quote(argv[i]);
                       return s;
                     }() +
                     "` failed (exit " +
                     std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + "): " + err);
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(slurp(out_path));
  } catch (const std::exception&) {
    throw InputError(what + ": the command's output is not JSON (add --format json)");
  }
  try {
    const nlohmann::json& v = j.at(nlohmann::json::json_pointer(pointer));
    if (!v.is_number()) throw InputError(what + ": value " + pointer + " is not a number");
    return v.get<double>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(what + ": value " + pointer + " is not in the command's JSON output");
  }
}

}  // namespace kappasim::analysis
