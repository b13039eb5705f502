// Outputs appear whole or not at all.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/error.hpp"
#include "core/output.hpp"
#include "core/table.hpp"

namespace kappasim {
namespace output_test {
namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path fresh_dir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("kappasim-test-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(Output, AtomicWriteReplacesWholeFile) {
  fs::path d = fresh_dir("atomic");
  write_file_atomic((d / "a.txt").string(), "one");
  write_file_atomic((d / "a.txt").string(), "two");
  EXPECT_EQ(slurp(d / "a.txt"), "two");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);
  // A path into a missing folder: bad input, exit code 2 (an IoError carrying it).
  try {
    write_file_atomic((d / "missing" / "a.txt").string(), "x");
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_EQ(e.exit_code(), 2) << e.what();
  }
  fs::remove_all(d);
}

TEST(Output, FolderAppearsOnlyOnCommit) {
  fs::path d = fresh_dir("dir");
  fs::path out = d / "results";
  {
    OutputDir o(out.string());
    o.write("a.csv", "1\n");
    EXPECT_FALSE(fs::exists(out));
    // destroyed without commit: nothing appears, no staging left behind
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 0);
  {
    OutputDir o(out.string());
    o.write("a.csv", "1\n");
    o.write("sub/b.csv", "2\n");
    o.commit();
  }
  EXPECT_EQ(slurp(out / "a.csv"), "1\n");
  EXPECT_EQ(slurp(out / "sub" / "b.csv"), "2\n");
  {
    // A failed rerun leaves the previous results untouched.
    OutputDir o(out.string());
    o.write("a.csv", "changed\n");
  }
  EXPECT_EQ(slurp(out / "a.csv"), "1\n");
  {
    OutputDir o(out.string());
    o.write("c.csv", "3\n");
    o.commit();
  }
  EXPECT_FALSE(fs::exists(out / "a.csv"));  // replaced whole
  EXPECT_EQ(slurp(out / "c.csv"), "3\n");
  fs::remove_all(d);
}

// Issue 24: files known before a run (the effective config) and the folder's marker are written
// on a second thread while the run goes; commit() waits for them, writes the marker again only
// when the folder's files are not the ones announced, and reports the thread's error.
TEST(Output, FilesWrittenAheadAreTheCommittedFoldersAndTheirErrorsItsOwn) {
  fs::path d = fresh_dir("ahead");
  fs::path out = d / "results";
  const std::string head =
      "kappasim output folder\n"
      "files written by kappasim (a rerun replaces these and keeps any other):\n";
  {
    OutputDir o(out.string());
    o.write_ahead({{"config.yaml", "model: x\n"}}, {"a.csv", "config.yaml"});
    EXPECT_THROW(o.write_ahead(OutputDir::Files{}, {}), std::logic_error);  // once per folder
    o.write("a.csv", "1\n");
    EXPECT_FALSE(fs::exists(out));
    o.commit();
  }
  EXPECT_EQ(slurp(out / "config.yaml"), "model: x\n");
  EXPECT_EQ(slurp(out / "a.csv"), "1\n");
  EXPECT_EQ(slurp(out / kOutputMarker), head + "a.csv\nconfig.yaml\n");
  {  // the files turn out otherwise than announced: the marker lists what is there
    OutputDir o(out.string());
    o.write_ahead({{"config.yaml", "model: y\n"}}, {"config.yaml", "missing.csv"});
    o.write("b.csv", "2\n");
    o.commit();
  }
  EXPECT_EQ(slurp(out / kOutputMarker), head + "b.csv\nconfig.yaml\n");
  EXPECT_FALSE(fs::exists(out / "a.csv"));  // replaced whole, as ever
  {  // destroyed without commit: nothing appears, the previous results stay
    OutputDir o(out.string());
    o.write_ahead({{"config.yaml", "model: z\n"}}, {"config.yaml"});
  }
  EXPECT_EQ(slurp(out / "config.yaml"), "model: y\n");
  {  // the thread's error is commit()'s, and nothing is replaced
    OutputDir o(out.string());
    o.write("f", "a file, not a folder\n");
    o.write_ahead({{"f/config.yaml", "model: w\n"}}, {"f", "f/config.yaml"});
    EXPECT_THROW(o.commit(), IoError);
  }
  EXPECT_EQ(slurp(out / "config.yaml"), "model: y\n");
  {  // contents made on the thread: its files are the folder's; what making them throws, commit()'s
    const std::string text = "model: v\n";  // read by the thread until commit() returns
    OutputDir o(out.string());
    o.write_ahead(
        [&text]() -> OutputDir::Files {
          return {{"config.yaml", text}};
        },
        {"config.yaml"});
    o.commit();
  }
  EXPECT_EQ(slurp(out / "config.yaml"), "model: v\n");
  EXPECT_EQ(slurp(out / kOutputMarker), head + "config.yaml\n");
  {
    OutputDir o(out.string());
    o.write_ahead([]() -> OutputDir::Files { throw std::runtime_error("cannot make it"); },
                  {"config.yaml"});
    EXPECT_THROW(o.commit(), std::runtime_error);
  }
  EXPECT_EQ(slurp(out / "config.yaml"), "model: v\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);  // no staging
  fs::remove_all(d);
}

TEST(Output, RefusesAFileAsFolder) {
  fs::path d = fresh_dir("file");
  write_file_atomic((d / "f").string(), "x");
  EXPECT_THROW(OutputDir((d / "f").string()), InputError);
  fs::remove_all(d);
}

// A full disk: write_file_atomic writes a temporary sibling and renames it, so /dev/full cannot
// stand in (as root the sibling would be created in /dev and renamed over the device). A file
// size limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes write(2) fail the same way ENOSPC does; it is
// set in a child process so that nothing else is limited.
TEST(Output, AtomicWriteOnAFullDiskIsAnIoErrorNamingThePath) {
  fs::path d = fresh_dir("full");
  const std::string path = (d / "summary.json").string();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{100, 100};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    int code = 1;
    try {
      write_file_atomic(path, std::string(4096, 'x'));
    } catch (const IoError& e) {  // exit code 4, not 2: the machine's fault, not the input's
      const std::string m = e.what();
      code = m.find("cannot write '" + path + "'") != std::string::npos &&
                     m.find("File too large") != std::string::npos
                 ? 0
                 : 2;
      if (code != 0) std::fprintf(stderr, "message: %s\n", m.c_str());
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no IoError, 2: wrong message, 3: setrlimit failed";
  // Neither the file nor its temporary sibling is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 0);
  fs::remove_all(d);
}

// Issue 12, item 5: a folder holding files kappasim did not write is refused (nothing touched);
// empty or marked folders, or force, are accepted.
TEST(Output, RefusesAUsersNonEmptyFolderUnlessMarkedOrForced) {
  fs::path d = fresh_dir("users");
  std::ofstream(d / "cfg.yaml") << "mine";
  EXPECT_THROW(OutputDir(d.string()), InputError);
  EXPECT_THROW(check_output_dir(d.string(), false), InputError);
  EXPECT_THROW(claim_output_dir(d.string(), false), InputError);
  EXPECT_FALSE(fs::exists(d / kOutputMarker));
  EXPECT_NO_THROW(check_output_dir(d.string(), true));
  {
    OutputDir out((d / "fresh").string());
    out.write("a.txt", "a");
    out.commit();
  }
  EXPECT_TRUE(fs::exists(d / "fresh" / kOutputMarker));
  EXPECT_FALSE(fs::exists(d / "fresh" / kStagingMarker));
  EXPECT_NO_THROW(check_output_dir((d / "fresh").string(), false));  // kappasim's own
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 2);  // no leftovers
  fs::remove_all(d);
}

// Folders written before the marker existed (a run's config.yaml, a report.md, a sweep.yaml as
// kappasim writes them) are still kappasim's: a rerun into them needs no --force.
TEST(Output, FoldersOfOlderKappasimRunsAreStillAccepted) {
  fs::path d = fresh_dir("legacy");
  fs::create_directories(d / "run");
  std::ofstream(d / "run" / "config.yaml")
      << "# effective configuration of this run (kappasim run --dump-config)\n";
  std::ofstream(d / "run" / "requests.csv") << "id\n";
  EXPECT_NO_THROW(check_output_dir((d / "run").string(), false));
  fs::create_directories(d / "rep");
  std::ofstream(d / "rep" / "report.md") << "# kappasim analytic report\n";
  EXPECT_NO_THROW(check_output_dir((d / "rep").string(), false));
  fs::create_directories(d / "user");
  std::ofstream(d / "user" / "report.md") << "# my report\n";  // not kappasim's first line
  EXPECT_THROW(check_output_dir((d / "user").string(), false), InputError);
  fs::remove_all(d);
}

// Issue 12, item 9: error excerpts are short and on one line.
TEST(Output, ExcerptIsShortOneLineAndKeepsUtf8Whole) {
  EXPECT_EQ(excerpt("short"), "short");
  EXPECT_EQ(excerpt(std::string(100, 'a'), 10), "aaaaaaaaaa...");
  EXPECT_EQ(excerpt(std::string("a\0b", 3)), "a?b");
  EXPECT_EQ(excerpt(std::string("a\nb", 3)), "a?b");
  // "κκ" is 4 bytes; a cut at 3 falls inside the second κ and backs off to the first.
  EXPECT_EQ(excerpt("κκ", 3), "κ...");
}

TEST(Table, CsvAndJsonEscapeAndRoundTripNumbers) {
  Table t({"name", "value", "n"});
  t.add_row({std::string("a,\"b\""), 0.1, static_cast<std::int64_t>(3)});
  t.add_row({std::string("c"), 327680.0, std::monostate{}});
  EXPECT_EQ(t.csv(), "name,value,n\n\"a,\"\"b\"\"\",0.1,3\nc,327680,\n");
  EXPECT_EQ(t.json(),
            "[\n  {\"name\": \"a,\\\"b\\\"\", \"value\": 0.1, \"n\": 3},\n"
            "  {\"name\": \"c\", \"value\": 327680, \"n\": null}\n]\n");
  EXPECT_THROW(t.add_row({1.0}), std::logic_error);
  EXPECT_EQ(t.project({"n", "name"}).columns(), (std::vector<std::string>{"n", "name"}));
}

}  // namespace
}  // namespace output_test
}  // namespace kappasim
