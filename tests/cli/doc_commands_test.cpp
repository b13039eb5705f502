// Every `kappasim` command line README.md and docs/*.md show in a code block runs, exits 0 and,
// where the doc quotes its result, prints it (issue 26.4: the documented solve said "26.9 GB"
// and the binary said "never met"; a documented --load-path was refused).
//
// What counts as a command: a line in a ``` block starting with `$K ` (README's K=kappasim) or
// `kappasim `, lines ending in `\` joined, `a ; b` and `a && b` split, a trailing `# comment`
// cut off. A result the doc quotes is written in the comment as `(out: TEXT)`: the command's
// stdout + stderr must contain TEXT (docs/README's convention, one marker per quoted value).
// The commands of one file run in order in one fresh folder (so `design emit --out my-presets`
// feeds the next line's `--preset-dir my-presets`), with experiments/ and presets/ linked in.
// kSkip lists, with the reason, every command that is deliberately not run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_util.hpp"

namespace doc_commands_test {
namespace {

namespace fs = std::filesystem;

struct DocCommand {
  std::string file;
  int line = 0;
  std::string args;                 // after `$K ` / `kappasim `
  std::vector<std::string> expect;  // (out: TEXT) markers
};

// Commands not run, each with its reason. A command is skipped when it contains the text.
struct Skip {
  const char* contains;
  const char* why;
};
const Skip kSkip[] = {
    // Long by design (minutes on 2 cores); each has its own test or benchmark.
    {"reproduce --out", "the whole report: minutes (ctest Reproduce.* runs --quick)"},
    {"bench serving", "a wall-clock benchmark: tens of seconds by design (bench/)"},
    {"sweep experiments/studies/interconnect.yaml", "a whole study: minutes (sweep tests)"},
    {"sensitivity experiments/paper/narrativeqa-70rps.yaml",
     "a tornado of the simulated config, ~40 simulations: minutes (analysis CLI tests)"},
    {"calibrate experiments/calibration/h100-copy-kernel.yaml",
     "a fit over simulated probes: over two minutes on 2 cores (analysis CLI tests)"},
    {"validate --out docs/validation.md",
     "writes the repository's own docs/validation.md "
     "(ctest validate_check runs it)"},
    {"presets check", "loads every preset: covered by Cli.PresetsCheckPassesAndShowResolves"},
    {"metrics --update docs/metrics.md",
     "rewrites the repository's own docs/metrics.md (ctest "
     "StatCatalog.DocsMetricsHoldsExactlyTheGeneratedTables checks it)"},
    // Fixed or shared paths.
    {"/shared/", "a cluster's shared folder (sweep emit slurm is tested in sweep_cli_test)"},
    // The user's own files in an example, not files in this repository.
    {"my/cfg.yaml", "the reader's own config"},
    {"lab/", "the reader's own presets (and sweep spec)"},
    {"collect out/my", "collects the reader's own sweep (the line before)"},
    {"run cfg.yaml", "the reader's own config"},
    {" CFG ", "a usage line (CFG: your config)"},
    {" DIR", "a usage line (DIR: a folder of yours; SPEC: your sweep spec)"},
};

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  const auto b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// Cuts a trailing "# comment" that is outside quotes; returns the comment (without '#').
std::string cut_comment(std::string& line) {
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ')) {
      const std::string comment = line.substr(i + 1);
      line = trim(line.substr(0, i));
      return comment;
    }
  }
  return "";
}

std::vector<DocCommand> extract(const fs::path& md, const std::string& name) {
  std::vector<DocCommand> out;
  std::ifstream in(md);
  std::string raw, joined;
  bool in_block = false;
  int n = 0, start = 0, last_command_line = -1;
  while (std::getline(in, raw)) {
    ++n;
    if (raw.rfind("```", 0) == 0) {
      in_block = !in_block;
      joined.clear();
      continue;
    }
    if (!in_block) continue;
    if (joined.empty()) start = n;
    std::string t = trim(raw);
    if (!t.empty() && t.back() == '\\') {
      joined += t.substr(0, t.size() - 1) + " ";
      continue;
    }
    std::string line = trim(joined + t);
    joined.clear();
    if (line.rfind("$ ", 0) == 0) line = line.substr(2);
    const std::string comment = cut_comment(line);
    std::vector<std::string> expect;
    static const std::regex kOut(R"(\(out: ([^)]*)\))");
    for (std::sregex_iterator it(comment.begin(), comment.end(), kOut), end; it != end; ++it)
      expect.push_back((*it)[1]);
    // A comment line right below a command ("#   -> 0.469 req/s (out: …)") quotes its result.
    if (line.empty()) {
      if (!out.empty() && out.back().file == name && last_command_line == n - 1)
        out.back().expect.insert(out.back().expect.end(), expect.begin(), expect.end());
      continue;
    }
    // a ; b  and  a && b: each part that is a kappasim command
    std::vector<std::string> parts;
    std::size_t from = 0;
    for (;;) {
      const std::size_t semi = line.find(" ; ", from), amp = line.find(" && ", from);
      const std::size_t at = std::min(semi, amp);
      parts.push_back(
          trim(line.substr(from, at == std::string::npos ? std::string::npos : at - from)));
      if (at == std::string::npos) break;
      from = at + (at == semi ? 3 : 4);
    }
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const std::string& p = parts[i];
      std::string args;
      if (p.rfind("$K ", 0) == 0) args = p.substr(3);
      if (p.rfind("kappasim ", 0) == 0) args = p.substr(9);
      if (args.empty()) continue;
      // The markers belong to the last command of the line (the one the comment follows).
      out.push_back(
          {name, start, args, i + 1 == parts.size() ? expect : std::vector<std::string>{}});
      last_command_line = n;
    }
  }
  return out;
}

std::vector<DocCommand> all_commands() {
  const fs::path src(KAPPASIM_SOURCE_DIR);
  std::vector<DocCommand> all = extract(src / "README.md", "README.md");
  std::vector<fs::path> docs;
  for (const auto& e : fs::directory_iterator(src / "docs"))
    if (e.path().extension() == ".md") docs.push_back(e.path());
  std::sort(docs.begin(), docs.end());
  for (const auto& d : docs) {
    auto more = extract(d, "docs/" + d.filename().string());
    all.insert(all.end(), more.begin(), more.end());
  }
  return all;
}

const Skip* skip_of(const DocCommand& c) {
  const std::string padded = " " + c.args + " ";
  for (const Skip& s : kSkip)
    if (padded.find(s.contains) != std::string::npos) return &s;
  // A usage line with optional parts or placeholders ([--quick], <seed column>).
  static const std::regex kPlaceholder(R"(\[-|<[A-Za-z])");
  if (std::regex_search(c.args, kPlaceholder)) {
    static const Skip usage{"[ or <", "a usage line with placeholders"};
    return &usage;
  }
  return nullptr;
}

TEST(DocCommands, ExtractorFindsTheExamplesAndEverySkipIsUsed) {
  const std::vector<DocCommand> all = all_commands();
  int readme = 0;
  for (const auto& c : all) readme += c.file == "README.md";
  EXPECT_GE(readme, 40) << "README.md's examples were not found";
  // `presets list ; presets show system/gb200 ; presets check` is three commands.
  int presets = 0;
  for (const auto& c : all) presets += c.args.rfind("presets ", 0) == 0;
  EXPECT_GE(presets, 4);
  // A skip entry that matches nothing is stale: remove it.
  for (const Skip& s : kSkip) {
    bool used = false;
    for (const auto& c : all) used = used || skip_of(c) == &s;
    EXPECT_TRUE(used) << "skip entry '" << s.contains << "' matches no command";
  }
}

TEST(DocCommands, EveryReadmeAndDocsCommandRunsAndPrintsWhatTheDocQuotes) {
  const fs::path src(KAPPASIM_SOURCE_DIR);
  const fs::path root = kappasim::test::fresh_dir("doc-commands");
  std::string folder_of_file;
  fs::path work;
  int ran = 0;
  for (const DocCommand& c : all_commands()) {
    if (skip_of(c)) continue;
    if (c.file != folder_of_file) {  // one fresh folder per file
      folder_of_file = c.file;
      std::string tag = c.file;
      for (char& ch : tag)
        if (ch == '/' || ch == '.') ch = '-';
      work = root / tag;
      fs::create_directories(work);
      fs::create_directory_symlink(src / "experiments", work / "experiments");
      fs::create_directory_symlink(src / "presets", work / "presets");
    }
    // `run` examples are the paper's 1000-request configs: a few seconds each, seven of them.
    // Here each runs its first 20 requests (the config, its keys and the flags are what is
    // checked), unless the line quotes a result: that one runs whole, as the doc ran it (the
    // decode-tier example of docs/disaggregation.md, 300 requests in well under a second).
    const bool shrink = c.args.rfind("run ", 0) == 0 && c.expect.empty();
    const std::string args = shrink ? c.args + " --set workload.requests=20" : c.args;
    const std::string cmd = "cd '" + work.string() + "' && timeout 300 " + KAPPASIM_BIN + " " +
                            args + " > out.txt 2> err.txt; echo $?";
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[64] = {};
    const std::size_t n = std::fread(buf, 1, sizeof buf - 1, p);
    ::pclose(p);
    const int code = std::atoi(std::string(buf, n).c_str());
    const std::string out =
        kappasim::test::slurp(work / "out.txt") + kappasim::test::slurp(work / "err.txt");
    ++ran;
    EXPECT_EQ(code, 0) << c.file << ":" << c.line << ": kappasim " << c.args << "\n"
                       << out.substr(0, 2000);
    for (const std::string& e : c.expect)
      EXPECT_NE(out.find(e), std::string::npos)
          << c.file << ":" << c.line << ": kappasim " << c.args << "\nthe doc quotes '" << e
          << "'; the command printed:\n"
          << out.substr(0, 3000);
  }
  EXPECT_GE(ran, 30);
  fs::remove_all(root);
}

}  // namespace
}  // namespace doc_commands_test
