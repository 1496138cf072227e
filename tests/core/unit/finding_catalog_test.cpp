// The finding catalogue (analyzer/core/finding_catalog.h) against the registry of rules
// and the documents that promise its ids: README.md's "Finding ids are stable" list and
// shared/PRODUCT.md's "Finding catalogue" (ids and default severities; skipped when the
// file is not next to the checkout).
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/finding.h"
#include "core/finding_catalog.h"
#include "report/report.h"
#include "report/rule_registry.h"

namespace colabtrace::analyzer {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every `...` span of text.
std::vector<std::string> Quoted(std::string_view text) {
  std::vector<std::string> out;
  for (size_t i = text.find('`'); i != std::string_view::npos; i = text.find('`', i + 1)) {
    const size_t end = text.find('`', i + 1);
    if (end == std::string_view::npos) break;
    out.emplace_back(text.substr(i + 1, end - i - 1));
    i = end;
  }
  return out;
}

std::vector<std::string> CatalogueNames() {
  std::vector<std::string> names;
  for (const FindingSpec& s : FindingCatalog()) names.emplace_back(s.name);
  return names;
}

TEST(FindingCatalog, RowsAreInIdOrderWithTheirAreaPrefix) {
  ASSERT_EQ(FindingCatalog().size(), kFindingIdCount);
  std::set<std::string_view> seen;
  for (size_t i = 0; i < FindingCatalog().size(); ++i) {
    const FindingSpec& s = FindingCatalog()[i];
    EXPECT_EQ(static_cast<size_t>(s.id), i);
    EXPECT_TRUE(seen.insert(s.name).second) << s.name;
    EXPECT_EQ(s.name.substr(0, s.name.find('.')), FindingAreaName(s.area)) << s.name;
    EXPECT_FALSE(s.title.empty()) << s.name;
    EXPECT_FALSE(s.advice.empty()) << s.name;
    EXPECT_EQ(FindFindingSpec(s.name), &s);
  }
  EXPECT_EQ(FindFindingSpec("gpu.nonsense"), nullptr);
}

TEST(FindingCatalog, FindingOfTakesTheDefaults) {
  const Finding f = Finding::Of(FindingId::kAbiLoadFailed, 42);
  EXPECT_EQ(f.id, "abi.load-failed");
  EXPECT_EQ(f.pid, 42);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.advice, SpecOf(FindingId::kAbiLoadFailed).advice);
}

TEST(FindingCatalog, EveryIdHasExactlyOneRule) {
  for (const FindingSpec& s : FindingCatalog()) {
    EXPECT_EQ(RulesOf(s.id).size(), 1u) << s.name << ": registered rules";
  }
  for (const RegisteredRule* r : RegisteredRules()) {
    ASSERT_FALSE(r->ids.empty());
    for (FindingId id : r->ids) EXPECT_EQ(SpecOf(id).area, SpecOf(r->ids.front()).area);
  }
}

TEST(FindingCatalog, ReportRefusesAnIdOutsideTheCatalogue) {
  const std::vector<ProcessTrace> none;
  ReportBuilder report(none, ReportOptions{});
  Finding f = Finding::Of(FindingId::kIoErrors, 0);
  report.AddFinding(f);
  f.id = "io.not-in-the-catalogue";
  EXPECT_THROW(report.AddFinding(f), std::logic_error);
  EXPECT_EQ(report.findings().size(), 1u);
}

TEST(FindingCatalog, ARuleMayOnlyAddTheIdsItRegistered) {
  const std::vector<ProcessTrace> none;
  ReportBuilder report(none, ReportOptions{});
  const FindingId ids[] = {FindingId::kGpuOom, FindingId::kGpuOomFragmentation};
  RuleContext ctx(report, ids);
  ctx.Add(Finding::Of(FindingId::kGpuOomFragmentation, 1));
  EXPECT_THROW(ctx.Add(Finding::Of(FindingId::kGpuLeak, 1)), std::logic_error);
  Finding warning = Finding::Of(FindingId::kGpuOom, 1);
  warning.severity = Severity::kWarning;  // gpu.oom is always an error
  EXPECT_THROW(ctx.Add(warning), std::logic_error);
  EXPECT_EQ(report.findings().size(), 1u);
}

// README.md: "Finding ids are stable, for CI and scripts: `proc.killed`, ... ." (one
// paragraph, in the catalogue's order).
TEST(FindingCatalog, ReadmeListsTheCatalogue) {
  const std::string readme = ReadFile(std::string(COLABTRACE_SOURCE_DIR) + "/README.md");
  const size_t at = readme.find("Finding ids are stable");
  ASSERT_NE(at, std::string::npos) << "README.md has no \"Finding ids are stable\" paragraph";
  size_t end = readme.find("\n\n", at);
  if (end == std::string::npos) end = readme.size();
  EXPECT_EQ(Quoted(std::string_view(readme).substr(at, end - at)), CatalogueNames());
}

// shared/PRODUCT.md's "Finding catalogue": one bullet per id, "- `id` (severity): ...".
// Its "Planned findings" section (the open issues' ids) lists ids the table may already
// hold: every catalogue id must be in the table, and every table id in one of the two.
struct ProductIds {
  std::vector<std::string> catalogue, planned;
};

// The "- `id` (severity)" bullets of PRODUCT.md's section `heading`; each id must be in the
// table, with the severity the bullet gives. An id the table lacks is an error only when
// `required`.
void ReadProductSection(const std::string& product, std::string_view heading, bool required,
                        std::vector<std::string>* ids) {
  const size_t at = product.find(heading);
  ASSERT_NE(at, std::string::npos) << "PRODUCT.md has no \"" << heading << "\" section";
  size_t end = product.find("\n## ", at + 1);
  if (end == std::string::npos) end = product.size();
  std::istringstream section(product.substr(at, end - at));
  for (std::string line; std::getline(section, line);) {
    if (line.rfind("- `", 0) != 0) continue;
    const size_t close = line.find('`', 3);
    ASSERT_NE(close, std::string::npos) << line;
    const std::string id = line.substr(3, close - 3);
    const FindingSpec* spec = FindFindingSpec(id);
    if (spec == nullptr) {
      EXPECT_FALSE(required) << id << " is in PRODUCT.md's catalogue, not in the table";
      continue;
    }
    ids->push_back(id);
    if (line.compare(close + 1, 2, " (") == 0) {
      const size_t paren = line.find(')', close);
      ASSERT_NE(paren, std::string::npos) << line;
      EXPECT_EQ(line.substr(close + 3, paren - close - 3), SeverityName(spec->severity)) << id;
    }
  }
}

TEST(FindingCatalog, ProductCatalogueListsTheCatalogue) {
  const std::string path = std::string(COLABTRACE_SOURCE_DIR) + "/../shared/PRODUCT.md";
  const std::string product = ReadFile(path);
  if (product.empty()) GTEST_SKIP() << path << " is not there";
  std::vector<std::string> ids;
  ReadProductSection(product, "## Finding catalogue", true, &ids);
  if (product.find("## Planned findings") != std::string::npos) {
    ReadProductSection(product, "## Planned findings", false, &ids);
  }
  std::vector<std::string> want = CatalogueNames();
  std::sort(ids.begin(), ids.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(ids, want);
}

}  // namespace
}  // namespace colabtrace::analyzer
