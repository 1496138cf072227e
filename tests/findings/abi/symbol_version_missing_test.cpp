// abi.symbol-version-missing (error): a load failed because the loaded provider lacks a
// version the requester needs. Golden trace, on tests/libs' fixtures (as
// tests/libs/test_abi.py provokes it for real): prov_old/libct_prov.so.1 (defines
// PROV_1.0) is loaded; then consumer/libct_consumer.so, linked against
// prov_new/libct_prov.so.1 (PROV_1.0 and PROV_2.0), fails with glibc's "version
// `PROV_2.0' not found"; LD_LIBRARY_PATH names prov_new. The evidence comes from the
// files: what the consumer needs, what the loaded provider defines, the copy that has it.
// A consumer that failed for a missing file instead is no version problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "abi_trace_builder.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using abitest::BuildIdOf;
using abitest::Fixture;
using abitest::TraceBuilder;
using analyzer::ProcessTrace;
using analyzer::Severity;
using format::LibApi;

struct Files {
  std::string old_provider, new_provider, consumer;
};

Files Fixtures() {
  return {Fixture("prov_old/libct_prov.so.1"), Fixture("prov_new/libct_prov.so.1"),
          Fixture("consumer/libct_consumer.so")};
}

std::vector<ProcessTrace> ConsumerFailsWith(const Files& f, const std::string& error) {
  TraceBuilder b(10);
  format::EnvVar e;
  e.name = b.Str("LD_LIBRARY_PATH");
  e.value = b.Str(f.new_provider.substr(0, f.new_provider.rfind('/')));
  e.source = static_cast<uint64_t>(format::EnvSource::kStartup);
  b.Add(e);
  b.Load(LibApi::kStartup, "/bin/ctload", 0x1000, "");
  b.LoadObject(LibApi::kDlopen, f.old_provider, 0x2000, "libct_prov.so.1", BuildIdOf(f.old_provider), "/bin/ctload");
  b.Load(LibApi::kDlopen, f.consumer, 0, "/bin/ctload", 0, RTLD_NOW, 0, false, error);
  b.Exit(1);
  return RunOf(b.Finish());
}

TEST(AbiSymbolVersionMissing, TheOlderProviderLacksTheVersionTheConsumerNeeds) {
  const Files f = Fixtures();
  ASSERT_FALSE(f.old_provider.empty() || f.new_provider.empty() || f.consumer.empty())
      << "tests/libs did not build the prov_old, prov_new and consumer fixtures";
  const std::string err = f.old_provider + ": version `PROV_2.0' not found (required by " + f.consumer + ")";
  auto traces = ConsumerFailsWith(f, err);
  const auto found = FindingsOf(traces, "abi.symbol-version-missing");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kError);
  EXPECT_EQ(found[0].pid, 10);
  const auto& ev = found[0].evidence;
  EXPECT_EQ(ev["error"].str(), err);
  EXPECT_EQ(ev["requested"].str(), f.consumer);
  EXPECT_EQ(ev["version"].str(), "PROV_2.0");
  EXPECT_TRUE(ev["symbol"].is_null());
  EXPECT_EQ(ev["required_by"].str(), f.consumer);
  EXPECT_EQ(ev["provider"].str(), f.old_provider);
  ASSERT_EQ(ev["provider_versions"].array().size(), 1u);
  EXPECT_EQ(ev["provider_versions"].array()[0].str(), "PROV_1.0");
  std::vector<std::string> needs;
  for (const auto& n : ev["required_versions"].array()) needs.push_back(n.str());
  std::sort(needs.begin(), needs.end());
  EXPECT_EQ(needs, (std::vector<std::string>{"libct_prov.so.1:PROV_1.0", "libct_prov.so.1:PROV_2.0"}));
  ASSERT_EQ(ev["copies_with_version"].array().size(), 1u);
  EXPECT_EQ(ev["copies_with_version"].array()[0].str(), f.new_provider);
  EXPECT_EQ(found[0].summary, "libct_consumer.so needs PROV_2.0, which " + f.old_provider + " does not provide");
}

TEST(AbiSymbolVersionMissing, AMissingFileIsNoVersionProblem) {
  const Files f = Fixtures();
  ASSERT_FALSE(f.old_provider.empty() || f.new_provider.empty() || f.consumer.empty());
  auto traces = ConsumerFailsWith(f, "libct_prov.so.1: cannot open shared object file: No such file or directory");
  EXPECT_TRUE(FindingsOf(traces, "abi.symbol-version-missing").empty());
  EXPECT_EQ(FindingsOf(traces, "abi.load-failed").size(), 1u);
}

}  // namespace
}  // namespace colabtrace::testing
