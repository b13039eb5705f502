// The validation runner (core/validation): reading rows with file:line errors, evaluating a row
// against a fake command (no kappasim process), the SI-to-unit conversion, the band check and
// the Markdown table. The real rows are checked end to end by the validate_check ctest.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/validation.hpp"
#include "tests/cli/cli_util.hpp"

namespace kappasim {
namespace validation_test {
namespace {

namespace fs = std::filesystem;

fs::path dir() {
  static const fs::path d = test::fresh_dir("validation");
  return d;
}

fs::path write(const std::string& name, const std::string& text) {
  const fs::path p = dir() / name;
  std::ofstream(p) << text;
  return p;
}

// One synthetic row: 2 ms measured, the command prints {"rows": [{"t_s": X}]}.
const char* kRow =
    "- id: synthetic-prefill\n"
    "  area: compute\n"
    "  source: \"hand-made\"\n"
    "  setup: \"a fake command\"\n"
    "  measured: 2\n"
    "  unit: ms\n"
    "  command: [probe, prefill, --format, json]\n"
    "  value: /rows/0/t_s\n"
    "  band: [0.9, 1.6]\n"
    "  band_why: \"because\"\n"
    "  gap: \"none\"\n";

CommandRunner printing(const std::string& json, int code = 0) {
  return [json, code](const std::vector<std::string>& argv, const std::string& cwd) {
    EXPECT_EQ(argv.size(), 4u);
    EXPECT_EQ(cwd, dir().string());  // the folder of the row's file
    CommandOutput o;
    o.exit_code = code;
    o.out = json;
    o.err = code ? "kappasim: error: --model: required" : "";
    return o;
  };
}

TEST(Validation, RowIsReadAndItsValueConvertedFromSi) {
  const auto rows = read_validation_rows(write("ok.yaml", kRow).string());
  ASSERT_EQ(rows.size(), 1u);
  const ValidationRow& r = rows[0];
  EXPECT_EQ(r.id, "synthetic-prefill");
  EXPECT_EQ(r.loc.line, 1);
  EXPECT_EQ(r.command.back(), "json");
  // 0.003 s printed in SI, unit ms: simulated 3 ms, ratio 3 / 2 = 1.5, inside [0.9, 1.6].
  const ValidationResult v = evaluate_row(r, printing("{\"rows\": [{\"t_s\": 0.003}]}"));
  EXPECT_DOUBLE_EQ(v.simulated, 3);
  EXPECT_DOUBLE_EQ(v.ratio, 1.5);
  EXPECT_TRUE(v.in_band);
  // 0.004 s: ratio 2, outside.
  EXPECT_FALSE(evaluate_row(r, printing("{\"rows\": [{\"t_s\": 0.004}]}")).in_band);
  // GB/s: 35.2e9 B/s is 35.2 GB/s.
  ValidationRow link = r;
  link.unit = "GB/s";
  link.measured = 35.2;
  EXPECT_NEAR(evaluate_row(link, printing("{\"rows\": [{\"t_s\": 35.2e9}]}")).ratio, 1.0, 1e-12);
}

TEST(Validation, MarkdownHasTheRowItsRatioAndTheOutMark) {
  const auto rows = read_validation_rows(write("md.yaml", kRow).string());
  const ValidationResult in = evaluate_row(rows[0], printing("{\"rows\": [{\"t_s\": 0.003}]}"));
  ValidationResult out = evaluate_row(rows[0], printing("{\"rows\": [{\"t_s\": 0.004}]}"));
  out.row.id = "synthetic-out";
  const std::string md = validation_markdown({in, out}, "kappasim validate");
  EXPECT_NE(md.find("| synthetic-prefill | hand-made | a fake command | 2 ms | 3 ms | 1.500 | "
                    "0.90–1.60 | in |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 2.000 | 0.90–1.60 | **out** |"), std::string::npos) << md;
  EXPECT_NE(md.find("2 rows, 1 outside their band."), std::string::npos) << md;
  // Deterministic: the same results give the same text.
  EXPECT_EQ(md, validation_markdown({in, out}, "kappasim validate"));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Validation, BadRowsNameTheFileAndLine) {
  std::string bad = kRow;
  bad.replace(bad.find("  gap:"), 6, "  gapp:");
  const std::string f = write("unknown.yaml", bad).string();
  std::string e = error_of([&] { read_validation_rows(f); });
  EXPECT_NE(e.find(f + ":11"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown field 'gapp'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'gap'"), std::string::npos) << e;

  std::string nounit = kRow;
  nounit.replace(nounit.find("unit: ms"), 8, "unit: parsecs");
  const std::string f2 = write("unit.yaml", nounit).string();
  e = error_of([&] { read_validation_rows(f2); });
  EXPECT_NE(e.find(f2 + ":6"), std::string::npos) << e;

  std::string band = kRow;
  band.replace(band.find("[0.9, 1.6]"), 10, "[1.6, 0.9]");
  e = error_of([&] { read_validation_rows(write("band.yaml", band).string()); });
  EXPECT_NE(e.find("0 < low <= high"), std::string::npos) << e;

  const std::string twice = std::string(kRow) + kRow;
  e = error_of([&] { read_validation_rows(write("twice.yaml", twice).string()); });
  EXPECT_NE(e.find("used twice"), std::string::npos) << e;
}

TEST(Validation, FailingCommandsAndBadPointersNameTheRow) {
  const std::string f = write("eval.yaml", kRow).string();
  const ValidationRow r = read_validation_rows(f)[0];
  std::string e = error_of([&] { evaluate_row(r, printing("", 2)); });
  EXPECT_NE(e.find(f + ":1"), std::string::npos) << e;
  EXPECT_NE(e.find("failed with exit code 2"), std::string::npos) << e;
  EXPECT_NE(e.find("--model: required"), std::string::npos) << e;
  e = error_of([&] { evaluate_row(r, printing("{\"rows\": [{\"other\": 1}]}")); });
  EXPECT_NE(e.find("'/rows/0/t_s' does not exist"), std::string::npos) << e;
  e = error_of([&] { evaluate_row(r, printing("{\"rows\": [{\"t_s\": \"fast\"}]}")); });
  EXPECT_NE(e.find("is not a number"), std::string::npos) << e;
  e = error_of([&] { evaluate_row(r, printing("model  time\nllama  3 ms\n")); });
  EXPECT_NE(e.find("did not print JSON"), std::string::npos) << e;
}

// A served figure is one draw of its workload: `seeds` runs the command (and the baseline) once
// per seed with `--set workload.seed=S` and takes the mean of each.
TEST(Validation, SeedsAverageTheCommandAndTheBaselineOverRuns) {
  std::string row = kRow;
  row.replace(row.find("[probe, prefill, --format, json]"), 32,
              "[run, a.yaml, --format, json]\n  baseline: [run, b.yaml, --format, json]\n"
              "  seeds: [1, 2, 4]");
  row.replace(row.find("unit: ms"), 8, "unit: \"1\"");
  const ValidationRow r = read_validation_rows(write("seeds.yaml", row).string())[0];
  ASSERT_EQ(r.seeds.size(), 3u);
  // Command a prints seed s as its value, b prints 2s: means 7/3 and 14/3, ratio 1/2.
  std::vector<std::string> seen;
  const CommandRunner run = [&](const std::vector<std::string>& argv, const std::string&) {
    EXPECT_EQ(argv.size(), 6u);
    EXPECT_EQ(argv[4], "--set");
    const double s = std::stod(argv[5].substr(argv[5].find('=') + 1));
    seen.push_back(argv[1] + " " + argv[5]);
    CommandOutput o;
    o.out = "{\"rows\": [{\"t_s\": " + std::to_string(argv[1] == "a.yaml" ? s : 2 * s) + "}]}";
    return o;
  };
  const ValidationResult v = evaluate_row(r, run);
  EXPECT_NEAR(v.simulated, (7.0 / 3) / (14.0 / 3), 1e-12);
  EXPECT_EQ(seen, (std::vector<std::string>{"a.yaml workload.seed=1", "a.yaml workload.seed=2",
                                            "a.yaml workload.seed=4", "b.yaml workload.seed=1",
                                            "b.yaml workload.seed=2", "b.yaml workload.seed=4"}));
  // row_commands lists what evaluate_row runs, in its order (kappasim validate runs them first,
  // several at once), and row_folder where.
  const auto cmds = row_commands(r);
  ASSERT_EQ(cmds.size(), 6u);
  EXPECT_EQ(cmds[2].back(), "workload.seed=4");
  EXPECT_EQ(cmds[3][1], "b.yaml");
  EXPECT_EQ(row_folder(r), dir().string());
  // Only a run takes a seed, and a seed is a whole number.
  std::string probe = kRow;
  probe += "  seeds: [1]\n";
  std::string e = error_of([&] { read_validation_rows(write("seedprobe.yaml", probe).string()); });
  EXPECT_NE(e.find("only a `run` command"), std::string::npos) << e;
  std::string neg = row;
  neg.replace(neg.find("[1, 2, 4]"), 9, "[1, -2]");
  e = error_of([&] { read_validation_rows(write("seedneg.yaml", neg).string()); });
  EXPECT_NE(e.find("'-2' is not a whole number"), std::string::npos) << e;
}

}  // namespace
}  // namespace validation_test
}  // namespace kappasim
