// Outputs appear whole or not at all.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/output.hpp"
#include "core/table.hpp"

namespace kappasim {
namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kappasim-test-" + std::to_string(::getpid()) + "-" + name);
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
  EXPECT_THROW(write_file_atomic((d / "missing" / "a.txt").string(), "x"), InputError);
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

TEST(Output, RefusesAFileAsFolder) {
  fs::path d = fresh_dir("file");
  write_file_atomic((d / "f").string(), "x");
  EXPECT_THROW(OutputDir((d / "f").string()), InputError);
  fs::remove_all(d);
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
}  // namespace kappasim
