// The golden tests cover every finding id: README.md's "Finding ids are stable" paragraph
// lists the ids; each id `area.name-with-dashes` has its test file
// tests/findings/<area>/<name_with_underscores>_test.cpp, which names the id in a string
// literal, and no file there names an id the list lacks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/finding_catalog.h"

namespace colabtrace::testing {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The ids of README's paragraph that starts "Finding ids are stable" (up to the next
// blank line), in the order listed.
std::vector<std::string> StableIds(const std::string& readme) {
  const size_t start = readme.find("Finding ids are stable");
  if (start == std::string::npos) return {};
  size_t end = readme.find("\n\n", start);
  if (end == std::string::npos) end = readme.size();
  const std::string para = readme.substr(start, end - start);
  static const std::regex id_re("`([a-z]+\\.[a-z-]+)`");
  std::vector<std::string> ids;
  for (auto it = std::sregex_iterator(para.begin(), para.end(), id_re); it != std::sregex_iterator(); ++it) {
    ids.push_back((*it)[1].str());
  }
  return ids;
}

// "gpu.oom-fragmentation" -> "gpu/oom_fragmentation_test.cpp".
std::string TestFileOf(const std::string& id) {
  const size_t dot = id.find('.');
  std::string name = id.substr(dot + 1);
  std::replace(name.begin(), name.end(), '-', '_');
  return id.substr(0, dot) + "/" + name + "_test.cpp";
}

// What is wrong with the coverage: ids without their file, files (relative to
// tests/findings, with their text) named after no id, and files that do not name
// their id as a string literal. Empty when the tree covers the list exactly.
std::vector<std::string> CoverageProblems(const std::vector<std::string>& ids,
                                          const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::string> problems;
  if (ids.empty()) problems.push_back("README.md lists no finding ids");
  std::set<std::string> expected;
  for (const std::string& id : ids) expected.insert(TestFileOf(id));
  std::set<std::string> present;
  for (const auto& [rel, text] : files) {
    present.insert(rel);
    if (!expected.contains(rel)) problems.push_back(rel + " names no finding id of README.md");
  }
  for (const std::string& id : ids) {
    const std::string rel = TestFileOf(id);
    if (!present.contains(rel)) {
      problems.push_back(id + " has no golden test (" + rel + ")");
      continue;
    }
    for (const auto& [r, text] : files) {
      if (r == rel && text.find("\"" + id + "\"") == std::string::npos) {
        problems.push_back(rel + " never names \"" + id + "\"");
      }
    }
  }
  return problems;
}

// The files of tests/findings/<folder>/ (each folder below it: an area), as
// "<folder>/<file>" with their text.
std::vector<std::pair<std::string, std::string>> AreaFiles(const fs::path& root) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const fs::directory_entry& area : fs::directory_iterator(root)) {
    if (!area.is_directory()) continue;
    for (const fs::directory_entry& f : fs::directory_iterator(area.path())) {
      if (!f.is_regular_file()) continue;
      out.emplace_back(area.path().filename().string() + "/" + f.path().filename().string(), ReadFile(f.path()));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FindingCoverage, EveryStableIdHasItsGoldenTestAndNoFileNamesAnUnknownId) {
  const std::string readme = ReadFile(fs::path(CT_SOURCE_DIR) / "README.md");
  const std::vector<std::string> ids = StableIds(readme);
  EXPECT_EQ(ids.size(), analyzer::kFindingIdCount);  // a paragraph cut short reads fewer
  const auto files = AreaFiles(fs::path(CT_SOURCE_DIR) / "tests" / "findings");
  const std::vector<std::string> problems = CoverageProblems(ids, files);
  for (const std::string& p : problems) ADD_FAILURE() << p;
  EXPECT_EQ(files.size(), ids.size());
}

// The check itself fails on each kind of gap.
TEST(FindingCoverage, TheCheckNamesAMissingFileAnUnknownFileAndAFileThatNeverNamesItsId) {
  const std::string readme =
      "intro\n\nFinding ids are stable, for CI: `proc.killed`, `gpu.oom-fragmentation`,\n"
      "`io.errors`.\n\nWhat `gpu.oom` means: not in the list.\n";
  const std::vector<std::string> ids = StableIds(readme);
  EXPECT_EQ(ids, (std::vector<std::string>{"proc.killed", "gpu.oom-fragmentation", "io.errors"}));
  const std::vector<std::pair<std::string, std::string>> files = {
      {"gpu/oom_fragmentation_test.cpp", "FindingsOf(traces, \"gpu.oom-fragmentation\")"},
      {"gpu/oom_test.cpp", "FindingsOf(traces, \"gpu.oom\")"},
      {"proc/killed_test.cpp", "FindingsOf(traces, \"proc.fatal-signal\")"},
  };
  EXPECT_EQ(CoverageProblems(ids, files),
            (std::vector<std::string>{"gpu/oom_test.cpp names no finding id of README.md",
                                      "proc/killed_test.cpp never names \"proc.killed\"",
                                      "io.errors has no golden test (io/errors_test.cpp)"}));
  EXPECT_EQ(CoverageProblems({}, {}), (std::vector<std::string>{"README.md lists no finding ids"}));
}

}  // namespace
}  // namespace colabtrace::testing
