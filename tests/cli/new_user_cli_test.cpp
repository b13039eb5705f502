// Issue 26 (round 3 of trying kappasim as a new user and an adversary) end to end: `design emit`
// writes only inside --out and treats it like every other output folder (26.2); a rerun keeps
// the user's files (26.3); help, suggestions and messages (26.14); slow modes say so (26.15);
// layouts (26.12) and carried-over leniency (26.17). Every case runs the built binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_util.hpp"

namespace new_user_cli_test {
namespace {

namespace fs = std::filesystem;
using kappasim::test::Result;
using kappasim::test::slurp;

fs::path scratch() {
  static const fs::path d = kappasim::test::fresh_dir("newuser-cli");
  return d;
}

Result run(const std::string& args) {
  return kappasim::test::run_shell(KAPPASIM_BIN, args, scratch() / "stderr.txt");
}

// Runs with the working directory `dir` (for relative --name / --out paths).
Result run_in(const fs::path& dir, const std::string& args) {
  return kappasim::test::run_shell("cd " + dir.string() + " && " + KAPPASIM_BIN, args,
                                   scratch() / "stderr.txt");
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

fs::path write(const std::string& name, const std::string& text) {
  const fs::path p = scratch() / name;
  std::ofstream(p) << text;
  return p;
}

// The base.yaml, smaller (20 requests) so each run takes well under a second.
const char* kBase =
    "model: llama-3.1-8b\nsystem: h100\nserving: {tp: 1}\n"
    "workload: {type: sharegpt, requests: 20, rate: 10, seed: 1}\n";

const char* kEmit =
    "design emit --budget area --link-fraction 0.02 --sram-fraction 0.01 --host gb200";

// ---- 26.2 ------------------------------------------------------------------------------------
TEST(NewUserDesignEmit, NameCannotLeaveOutAndNothingIsLeftOnError) {
  const fs::path home = scratch() / "emit";
  fs::create_directories(home / "work");
  std::ofstream(home / "victim.yaml") << "precious\n";
  // The command: --name ../../victim would have replaced victim.yaml.
  Result r = run_in(home / "work", std::string(kEmit) + " --name ../../victim --out em");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--name: '../../victim' is not a plain preset name")) << r.err;
  EXPECT_EQ(slurp(home / "victim.yaml"), "precious\n");
  EXPECT_FALSE(fs::exists(home / "work" / "em"));
  for (const char* name : {"x/y", ".hidden", "-dash", "a b"}) {
    r = run_in(home / "work", std::string(kEmit) + " --name '" + name + "' --out em");
    EXPECT_EQ(r.code, 2) << name << ": " << r.err;
    EXPECT_FALSE(fs::exists(home / "work" / "em")) << name;  // no empty gpus/ serving/ systems/
  }
  // A folder of the user's (not empty, no marker) is refused unless --force.
  fs::create_directories(home / "work" / "mine");
  std::ofstream(home / "work" / "mine" / "notes.txt") << "mine\n";
  r = run_in(home / "work", std::string(kEmit) + " --out mine");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--out: 'mine' is not empty and was not written by kappasim")) << r.err;
  EXPECT_FALSE(fs::exists(home / "work" / "mine" / "gpus"));
  r = run_in(home / "work", std::string(kEmit) + " --out mine --force");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(home / "work" / "mine" / "notes.txt"), "mine\n");
  // A kappasim preset folder takes further designs without --force.
  r = run_in(home / "work", std::string(kEmit) + " --out em --name a");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_in(home / "work", std::string(kEmit) + " --out em --name b");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(home / "work" / "em" / "gpus" / "a.yaml"));
  EXPECT_TRUE(fs::exists(home / "work" / "em" / "gpus" / "b.yaml"));
  EXPECT_TRUE(fs::exists(home / "work" / "em" / ".kappasim-output"));
}

// ---- 26.3 ------------------------------------------------------------------------------------
TEST(NewUserRerun, RunKeepsTheUsersFiles) {
  const fs::path cfg = write("base.yaml", kBase);
  const fs::path out = scratch() / "o";
  Result r = run("run " + cfg.string() + " -q --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  std::ofstream(out / "analysis.md") << "x\n";
  r = run("run " + cfg.string() + " -q --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(out / "analysis.md"), "x\n");  // before: deleted with exit 0
  EXPECT_TRUE(fs::exists(out / "summary.json"));
}

// ---- 26.14 -----------------------------------------------------------------------------------
TEST(NewUserHelp, HelpExitsZeroAndHintsNameTheRightThing) {
  for (const char* c : {"design --help", "help design", "design -h", "sweep emit --help"}) {
    const Result r = run(c);
    EXPECT_EQ(r.code, 0) << c << ": " << r.err;
    EXPECT_TRUE(has(r.out, "kappasim design emit") || has(r.out, "kappasim sweep emit slurm"))
        << c << ": " << r.out;
  }
  Result r = run("presets show system/h10");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "presets show: unknown system preset 'h10'; did you mean 'h100'?"))
      << r.err;
  EXPECT_FALSE(has(r.err, ": : ")) << r.err;
  r = run("presets show sytem/h100");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "unknown preset kind 'sytem'; did you mean 'system'?")) << r.err;
  for (const char* v : {"version", "-v"}) {
    r = run(v);
    EXPECT_EQ(r.code, 2) << v;
    EXPECT_TRUE(has(r.err, "did you mean '--version'?")) << v << ": " << r.err;
  }
  r = run("kappa -m llama-3.1-8b -s h100 --k 4096");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "did you mean '--context'?")) << r.err;
  r = run("measure poh -m llama-3.1-8b -s h100 --context 4096 --t 16");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "did you mean '--k'?")) << r.err;
  // One range, one wording: 0 and 1.5 both get "(0, 1]".
  const fs::path cfg = write("gmu.yaml", kBase);
  for (const char* v : {"0", "1.5"}) {
    r = run("run " + cfg.string() + " --out " + (scratch() / "gmu").string() +
            " --set serving.gpu_memory_utilization=" + v);
    EXPECT_EQ(r.code, 2) << v;
    EXPECT_TRUE(has(r.err, "serving.gpu_memory_utilization: must be a fraction in (0, 1]"))
        << v << ": " << r.err;
  }
  // --out . is the current folder: a bad --out (2), not a failed rename (EBUSY, 4).
  fs::create_directories(scratch() / "here");
  r = run_in(scratch() / "here", "run " + cfg.string() + " --out . --force");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--out: '.' is the current folder")) << r.err;
  // The hidden positional option is not an option.
  r = run("presets --args list");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.err, "unrecognised option '--args'")) << r.err;
  // An empty list item is named as such, not as a missing unit.
  r = run("measure poh -m llama-3.1-8b -s h100 --k 1,,2 --t 16");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--k: an empty value")) << r.err;
  EXPECT_FALSE(has(r.err, "unit")) << r.err;
}

// docs/bad-inputs.md: an error quotes at most 60 bytes of a value.
TEST(NewUserHelp, AFileGivenAsASystemIsQuotedShort) {
  const Result r = run("kappa -m llama-3.1-8b -s /etc/passwd");
  EXPECT_EQ(r.code, 2);
  // /etc/passwd is one YAML scalar holding '/', so it is read as a path to another preset file;
  // the message quotes that "path" (the file's text) in at most 60 bytes + "..." (was 160).
  const auto at = r.err.find("preset file '");
  ASSERT_NE(at, std::string::npos) << r.err;
  const auto from = at + 13, to = r.err.find('\'', from);
  ASSERT_NE(to, std::string::npos) << r.err;
  EXPECT_LE(to - from, 63u) << r.err;
}

// ---- 26.12 -----------------------------------------------------------------------------------
TEST(NewUserLayout, RepeatedLayoutKeyExitsTwo) {
  const Result r = run("kappa -m llama-3.1-70b -s h100 --layout tp=8,tp=4");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.err, "layout key 'tp' is given twice")) << r.err;
}

// ---- 26.15 -----------------------------------------------------------------------------------
TEST(NewUserSlow, KernelProbeLimitUsesThePathsRate) {
  // H100 copy kernel of one-warp blocks, one resident per SM, 8 B loads: 132 SMs x 1 warp x 32
  // threads x 8 B = 33.8 kB in flight per 1 µs round trip = 33.8 GB/s
  // (models/gpu/copy_kernel_shape.hpp), about half of PCIe 5 x16's 63 GB/s.
  // 3 PB over 63 GB/s is 47,600 s (inside 86,400 s); over 33.8 GB/s it is 88,800 s (outside).
  const Result r =
      run("probe h2d --system h100 --path kernel --sizes '300 GB' --blocks 10000 "
          "--load-width '8 B' --threads-per-block 32 --blocks-per-sm 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.err, "at the copy kernel path's rate")) << r.err;
}

// Slow modes say so before they start. The packet run is then stopped by a bad --out (the
// current folder, refused after the note); the probe, which has nothing to refuse after its
// note, by `timeout` (the test asserts the note, not a time).
TEST(NewUserSlow, PacketFidelityAndLongProbesSayWhatTheyCost) {
  const fs::path cfg = write("nqa-packet.yaml",
                             "model: llama-3.1-8b\nsystem: h100\n"
                             "serving: {tp: 1, link_fidelity: packet, warm_tier: true, "
                             "tier_capacity: 1 TB}\n"
                             "workload: {type: narrativeqa, requests: 2}\n");
  fs::create_directories(scratch() / "pkt-here");
  Result r = run_in(scratch() / "pkt-here", "run " + cfg.string() + " --out . --force");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "note: serving.link_fidelity: packet simulates every PCIe TLP")) << r.err;
  // 2 documents' prefixes of llama-3.1-8b KV (131,072 B per token) in 128 B completions.
  EXPECT_TRUE(has(r.err, "TLPs: roughly")) << r.err;
  // 10,000,000 blocks x 8 GPUs x 7 default sizes = 5.6e8 DMA copies.
  r = kappasim::test::run_shell("timeout 8 " + std::string(KAPPASIM_BIN),
                                "probe h2d --system h100 --gpus 8 --blocks 10000000",
                                scratch() / "stderr.txt");
  EXPECT_TRUE(has(r.err, "note: 560000000 copies to simulate")) << r.err;
}

}  // namespace
}  // namespace new_user_cli_test
