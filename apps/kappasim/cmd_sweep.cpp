// kappasim sweep: parameter sweeps, each point in its own process (docs/sweeps.md). Argument
// parsing and dispatch only; the runner (process pool, shards, locks, resume, merge, Slurm
// script) is the library in sweeps/runner/.
//
//   kappasim sweep SPEC --out DIR [-j N] [--quick] [--shard I/N | --shards N] [--quiet]
//   kappasim sweep point --kind K --config FILE --base-dir B --seed S --out PDIR
//   kappasim sweep collect DIR
//   kappasim sweep emit slurm SPEC --out DIR [--tasks N] [--cpus-per-task C] [--time T]
//                                  [--partition P] [--job-name NAME] [--script FILE] [--quick]
//   kappasim sweep kinds | points SPEC [--quick]
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include "apps/kappasim/cli.hpp"
#include "core/output.hpp"
#include "core/stats.hpp"
#include "report/figure.hpp"
#include "sweeps/aggregate.hpp"
#include "sweeps/runner/runner.hpp"

namespace kappasim::cli {

namespace {

using namespace kappasim::sweep;
namespace fs = std::filesystem;

const char* kSweepUsage =
    "kappasim sweep: parameter sweeps, each point in its own process (docs/sweeps.md)\n"
    "Usage:\n"
    "  kappasim sweep SPEC --out DIR [-j N] [--quick] [--shard I/N | --shards N] "
    "[--retry-invalid]\n"
    "                [--preset-dir DIR]... [--quiet]\n"
    "      run or resume the sweep; merges DIR/results.csv and results.jsonl when every point is "
    "done\n"
    "  kappasim sweep plot DIR --x KEY --y METRIC [--series KEY] [--out PDIR]\n"
    "      plot a metric of a finished sweep (mean and 95% t interval over replicates): CSV, "
    "gnuplot script, PNG and SVG in PDIR (default DIR/plots)\n"
    "  kappasim sweep point --kind K --config FILE --base-dir DIR --seed S --out PDIR\n"
    "      run one point (what the runner does per point; points/pNNNNNN/command.txt has the "
    "line)\n"
    "  kappasim sweep collect DIR [--aggregate]   merge a sharded sweep (exit 3 lists missing "
    "points);\n"
    "      --aggregate: per-configuration mean, sd and 95% t interval over replicates "
    "(aggregate.csv/.json)\n"
    "      --baseline KEY=VALUE[,...]: paired differences against that configuration "
    "(paired.csv)\n"
    "  kappasim sweep emit slurm SPEC --out DIR [--tasks N] [--cpus-per-task C] [--time T]\n"
    "                [--partition P] [--job-name NAME] [--script FILE] [--quick]\n"
    "      write an sbatch array script (stdout, or --script FILE)\n"
    "  kappasim sweep kinds              list the point kinds\n"
    "  kappasim sweep points SPEC [--quick]   print the expansion (id, axis values, seed) as CSV\n"
    "Shards: --shard I/N, else SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN (/ "
    "SLURM_ARRAY_TASK_STEP)\n"
    "of SLURM_ARRAY_TASK_COUNT, else JOB_COMPLETION_INDEX of --shards N or KAPPASIM_SHARDS.\n"
    "Exit codes: 0 all points ok, 3 some points invalid or failed (or, for collect, missing),\n"
    "2 bad spec or options, 1 internal error.\n";

int cmd_point(const std::vector<std::string>& args) {
  std::string kind, config, base_dir, seed_text, out;
  std::vector<std::string> preset_dirs;
  po::options_description desc("kappasim sweep point: run one sweep point\nOptions");
  desc.add_options()("kind", po::value(&kind), "point kind (kappasim sweep kinds)")(
      "preset-dir", po::value(&preset_dirs)->composing(), "add presets from DIR (repeatable)")(
      "config", po::value(&config), "the point's config (points/pNNNNNN/point.yaml)")(
      "base-dir", po::value(&base_dir), "folder relative paths in the config resolve against")(
      "seed", po::value(&seed_text), "the point's seed")(
      "out", po::value(&out), "the point's folder: result.json, files/")("help,h", "this help");
  auto vm = parse("sweep point", args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  for (const auto& [name, v] : {std::pair<const char*, std::string*>{"--kind", &kind},
                                {"--config", &config},
                                {"--seed", &seed_text},
                                {"--out", &out}})
    if (v->empty()) throw InputError(std::string("kappasim sweep point: ") + name + " is required");
  find_kind(kind);  // an unknown kind is named before the seed is read
  bool digits = seed_text.size() <= 20;
  for (char c : seed_text) digits = digits && c >= '0' && c <= '9';
  errno = 0;
  const unsigned long long seed = digits ? std::strtoull(seed_text.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE)
    throw InputError("--seed: expected a 64-bit unsigned integer, got \"" + seed_text + "\"");
  PointRunOptions o;
  o.kind = kind;
  o.config = config;
  o.base_dir = base_dir;
  o.out = out;
  o.seed = seed;
  o.preset_dirs = preset_dirs;
  run_point(o);
  return 0;
}

int cmd_collect(const std::vector<std::string>& args) {
  std::string dir;
  bool quiet = false;
  bool aggregate = false;
  std::string baseline;
  po::options_description desc("kappasim sweep collect DIR: merge a (sharded) sweep\nOptions");
  desc.add_options()("dir", po::value(&dir), "the sweep folder")("quiet,q", po::bool_switch(&quiet),
                                                                 "no summary")(
      "aggregate", po::bool_switch(&aggregate),
      "also write aggregate.csv and aggregate.json: per configuration, the mean, standard "
      "deviation and "
      "95% Student-t interval of every numeric metric over the replicates")(
      "baseline", po::value(&baseline),
      "KEY=VALUE[,KEY=VALUE...]: also write paired.csv, every other configuration minus this one, "
      "replicate by replicate (common random numbers), with a 95% t interval and lower/higher/"
      "within")("help,h", "this help");
  po::positional_options_description pos;
  pos.add("dir", 1);
  auto vm = parse("sweep collect", args, desc, &pos);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (dir.empty()) throw InputError("kappasim sweep collect: a sweep folder DIR is required");
  if (vm.count("baseline")) sweep::parse_baseline(baseline);  // bad syntax: before any work
  return collect_sweep({dir, quiet, aggregate, baseline});
}

int cmd_emit(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "slurm")
    throw InputError("kappasim sweep emit: expected 'slurm' (Kubernetes: see docs/sweeps.md)" +
                     (args.empty() ? std::string() : ", got '" + args[0] + "'"));
  std::vector<std::string> rest(args.begin() + 1, args.end());
  std::string spec_path, out, time_limit, partition, script, job_name;
  std::vector<std::string> preset_dirs;
  int tasks = 0, cpus = 1;
  bool quick = false;
  po::options_description desc(
      "kappasim sweep emit slurm SPEC --out DIR: an sbatch array script running the "
      "sweep\nOptions");
  desc.add_options()("spec", po::value(&spec_path), "the sweep spec")(
      "out,o", po::value(&out), "the sweep folder the tasks share")(
      "tasks", po::value(&tasks), "array tasks (shards); default: one per point, at most 1000")(
      "cpus-per-task", po::value(&cpus), "CPUs per task = parallel points per task (default 1)")(
      "time", po::value(&time_limit), "time limit per task, e.g. 01:00:00")(
      "partition", po::value(&partition), "Slurm partition")(
      "job-name", po::value(&job_name),
      "job name (default: the sweep's name; sanitised to [A-Za-z0-9._-])")(
      "script", po::value(&script), "write the script to FILE (default: stdout)")(
      "quick", po::bool_switch(&quick), "run the spec's quick: variant")(
      "preset-dir", po::value(&preset_dirs)->composing(), "add presets from DIR (repeatable)")(
      "help,h", "this help");
  po::positional_options_description pos;
  pos.add("spec", 1);
  auto vm = parse("sweep emit slurm", rest, desc, &pos);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  SlurmOptions so;
  so.spec_path = spec_path;
  so.out_dir = out;
  if (vm.count("tasks")) so.tasks = tasks;
  so.cpus_per_task = cpus;
  so.time_limit = time_limit;
  so.partition = partition;
  so.job_name = job_name;
  so.quick = quick;
  so.preset_dirs = preset_dirs;
  const std::string s = slurm_script(so);
  if (script.empty()) {
    std::cout << s;
  } else {
    write_file_atomic(script, s);
    ::chmod(script.c_str(), 0755);
  }
  return 0;
}

// kappasim sweep plot DIR --x KEY --y METRIC [--series KEY] (issue 26 item 26): the report's
// figure trio (report/figure FigureFolder: per-series CSV, gnuplot script, PNG + SVG) from a
// finished sweep's results.csv. Rows of one (series, x) (replicates) give the mean and the 95%
// Student t interval (core/stats), drawn as error bars. A quantity axis is plotted on its SI
// companion column (e.g. system.host_link.bandwidth_Bps).
int cmd_plot(const std::vector<std::string>& args) {
  std::string dir, x, y, series, out;
  po::options_description desc(
      "kappasim sweep plot DIR --x KEY --y METRIC [--series KEY] [--out PDIR]: a figure of a "
      "finished sweep\nOptions");
  desc.add_options()("dir", po::value(&dir), "the sweep folder (with results.csv)")(
      "x", po::value(&x), "axis column for the x axis (numeric, or a quantity axis)")(
      "y", po::value(&y), "metric column for the y axis")("series", po::value(&series),
                                                          "axis column: one line per value")(
      "out", po::value(&out), "folder for the figure (default DIR/plots)")("help,h", "this help");
  po::positional_options_description pos;
  pos.add("dir", 1);
  auto vm = parse("sweep plot", args, desc, &pos);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (dir.empty()) throw InputError("kappasim sweep plot: a sweep folder DIR is required");
  if (x.empty() || y.empty())
    throw InputError("kappasim sweep plot: --x KEY and --y METRIC are required");
  const SweepTable t = read_results_csv(dir);
  auto col = [&](const std::string& name, const std::string& option) -> std::size_t {
    for (std::size_t i = 0; i < t.columns.size(); ++i)
      if (t.columns[i] == name) return i;
    const std::string near = nearest(name, t.columns);
    std::string all;
    for (const auto& c : t.columns) all += (all.empty() ? "" : ", ") + c;
    throw InputError(option + " '" + name + "': no such column in " + dir + "/results.csv" +
                     (near.empty() ? "" : "; did you mean '" + near + "'?") + " (columns: " + all +
                     ")");
  };
  std::size_t xc = col(x, "--x");
  // A quantity axis ("64 GB/s"): its SI companion column follows it.
  std::string xlabel = x;
  if (xc + 1 < t.columns.size() && is_axis_si_column(x, t.columns[xc + 1])) {
    ++xc;
    xlabel = t.columns[xc];
  }
  const std::size_t yc = col(y, "--y");
  const std::size_t sc = series.empty() ? t.columns.size() : col(series, "--series");
  std::size_t status = t.columns.size();
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i] == "status") status = i;
  auto number = [](const std::string& s, double& v) {
    if (s.empty()) return false;
    char* end = nullptr;
    v = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size() && std::isfinite(v);
  };
  // series -> x -> samples, series in first-seen order.
  std::vector<std::string> order;
  std::map<std::string, std::map<double, std::vector<double>>> data;
  std::size_t used = 0;
  for (const auto& row : t.rows) {
    if (status < t.columns.size() && row[status] != "ok") continue;
    double xv = 0, yv = 0;
    if (!number(row[xc], xv))
      throw InputError("--x '" + x + "': value '" + row[xc] + "' in " + dir +
                       "/results.csv is not a number (plot a numeric axis or a quantity axis)");
    if (!number(row[yc], yv)) continue;  // blank: the point has no such figure
    const std::string s = sc < t.columns.size() ? row[sc] : y;
    if (!data.count(s)) order.push_back(s);
    data[s][xv].push_back(yv);
    ++used;
  }
  if (used == 0)
    throw InputError("kappasim sweep plot: no ok row of " + dir + "/results.csv has a number in '" +
                     y + "'");
  if (out.empty()) out = dir + "/plots";
  claim_output_dir(out, false);
  std::string stem = y + "-vs-" + x + (series.empty() ? "" : "-by-" + series);
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  report::FigureFolder fig(out);
  std::string plots;
  for (std::size_t i = 0; i < order.size(); ++i) {
    std::string csv = xlabel + "," + y + "_mean," + y + "_ci95_lo," + y + "_ci95_hi,n\n";
    for (const auto& [xv, ys] : data[order[i]]) {
      const stats::Interval iv = stats::mean_interval(ys, 0.95);
      auto num = [](double v) { return std::isfinite(v) ? format_number(v) : std::string(); };
      csv += format_number(xv) + "," + num(iv.mean) + "," + num(iv.n > 1 ? iv.lo : iv.mean) + "," +
             num(iv.n > 1 ? iv.hi : iv.mean) + "," + std::to_string(iv.n) + "\n";
    }
    const std::string f = stem + (order.size() > 1 ? "-" + std::to_string(i + 1) : "") + ".csv";
    fig.write_data(f, csv);
    std::string title = series.empty() ? y : series + " = " + order[i];
    for (char& c : title)
      if (c == '\'') c = '"';
    plots += std::string(plots.empty() ? "" : ", ") + "'" + f +
             "' using 1:2:3:4 skip 1 with yerrorlines lw 2 pt 7 title '" + title + "'";
  }
  std::string body = "  set datafile separator ','\n  set xlabel '" + xlabel + "'\n  set ylabel '" +
                     y + "'\n  set grid\n  set key outside right top\n  plot " + plots + "\n";
  const std::string md =
      fig.figure({stem, "kappasim sweep plot " + dir + ": " + y + " vs " + x, body});
  std::cout << "plot of " << y << " vs " << xlabel << " (" << order.size() << " series, " << used
            << " rows) in " << out << "/" << stem << ".gp"
            << (report::have_gnuplot() ? ", .png, .svg" : " (gnuplot not found: no .png/.svg)")
            << " and its CSV\n";
  return 0;
}

int cmd_points(const std::vector<std::string>& args) {
  std::string spec_path;
  bool quick = false;
  po::options_description desc(
      "kappasim sweep points SPEC: the expansion, without running\nOptions");
  desc.add_options()("spec", po::value(&spec_path), "the sweep spec")(
      "quick", po::bool_switch(&quick), "the quick: variant")("help,h", "this help");
  po::positional_options_description pos;
  pos.add("spec", 1);
  auto vm = parse("sweep points", args, desc, &pos);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (spec_path.empty()) throw InputError("kappasim sweep points: a SPEC file is required");
  const SweepSpec spec = load_sweep_spec(spec_path, quick, known_kind);
  const auto points = expand(spec);
  std::cout << points_csv(spec, points);
  std::cerr << "sweep " << spec.name << ": " << points.size() << " points of kind " << spec.kind
            << " (spec hash " << spec_hash(spec) << ")\n";
  return 0;
}

}  // namespace

int cmd_sweep(const std::vector<std::string>& args) {
  const std::string verb = args.empty() ? "" : args[0];
  std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (verb.empty()) {
    std::cerr << kSweepUsage;
    return 2;
  }
  if (verb == "--help" || verb == "-h" || verb == "help") {
    std::cout << kSweepUsage;
    return 0;
  }
  if (verb == "point") return cmd_point(rest);
  if (verb == "collect") return cmd_collect(rest);
  if (verb == "emit") return cmd_emit(rest);
  if (verb == "points") return cmd_points(rest);
  if (verb == "plot") return cmd_plot(rest);
  if (verb != "kinds" && verb[0] != '-' && !fs::exists(verb)) {
    // Not a spec file: a mistyped verb gets a suggestion (issue 12, item 14).
    const std::string near = nearest(verb, {"point", "collect", "emit", "points", "kinds", "plot"});
    if (!near.empty())
      throw InputError("kappasim sweep: '" + verb +
                       "' is neither a spec file nor a verb; did you mean '" + near + "'?");
  }
  if (verb == "kinds") {
    for (const auto& k : kinds().all())
      std::cout << k.name << std::string(k.name.size() < 10 ? 10 - k.name.size() : 1, ' ') << k.doc
                << "\n";
    return 0;
  }
  SweepOptions o;
  std::string shard, shards;
  po::options_description desc("kappasim sweep SPEC --out DIR\nOptions");
  desc.add_options()("spec", po::value(&o.spec_path), "the sweep spec (YAML)")(
      "out,o", po::value(&o.out_dir), "the sweep folder (created; a rerun resumes it)")(
      "jobs,j", po::value(&o.jobs), "points run at once (default: one per core)")(
      "quick", po::bool_switch(&o.quick), "the spec's quick: variant")(
      "retry-invalid", po::bool_switch(&o.retry_invalid),
      "rerun points recorded as invalid (skipped on resume: an input error recurs)")(
      "quiet,q", po::bool_switch(&o.quiet), "no progress or summary")(
      "force", po::bool_switch(&o.force), "use DIR even if it holds files kappasim did not write")(
      "shard", po::value(&shard), "run only points with index % N == I (I/N)")(
      "shards", po::value(&shards),
      "shard count for a Kubernetes Indexed Job (JOB_COMPLETION_INDEX)")(
      "preset-dir", po::value(&o.preset_dirs)->composing(),
      "add presets from DIR (<DIR>/gpus/*.yaml, systems/, ...; repeatable); passed to every point")(
      "help,h", "this help");
  po::positional_options_description pos;
  pos.add("spec", 1);
  auto vm = parse("sweep", args, desc, &pos);
  if (vm.count("help")) {
    std::cout << kSweepUsage << "\n" << desc << "\n";
    return 0;
  }
  if (vm.count("jobs")) checked_jobs(o.jobs);
  o.shard = resolve_shard(shard, shards, [](const char* name) { return std::getenv(name); });
  o.fork_points = true;  // points in forked children of this warm process (no simulation here)
  return run_sweep(o);
}

}  // namespace kappasim::cli
