// The shim's mountinfo parser (shim/io/mountinfo.h) on fixtures, and the analyzer's
// filesystem classifier (analyzer/io/filesystems.h) on what it parses.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "io/filesystems.h"
#include "io/mountinfo.h"

namespace {

using colabtrace::analyzer::io::ClassifyFilesystem;
using colabtrace::analyzer::io::FsClass;
using colabtrace::analyzer::io::FsClassName;
using colabtrace::shim::io::ForEachMountInfoLine;
using colabtrace::shim::io::MakeDev;
using colabtrace::shim::io::MountInfoLine;
using colabtrace::shim::io::ParseMountInfoLine;

struct Parsed {
  uint32_t id, parent, major, minor;
  std::string root, mountpoint, fstype, source;
};

std::vector<Parsed> ParseAll(std::string text) {
  std::vector<Parsed> out;
  ForEachMountInfoLine(text.data(), text.size(), [&](const MountInfoLine& m) {
    out.push_back({m.id, m.parent, m.major, m.minor, std::string(m.root),
                   std::string(m.mountpoint), std::string(m.fstype), std::string(m.source)});
  });
  return out;
}

std::string Fixture(const char* name) {
  std::ifstream in(std::string(IO_TESTDATA) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(MountInfo, ParsesTheManPageExample) {
  std::string line =
      "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue";
  MountInfoLine m;
  ASSERT_TRUE(ParseMountInfoLine(line.data(), line.size(), &m));
  EXPECT_EQ(m.id, 36u);
  EXPECT_EQ(m.parent, 35u);
  EXPECT_EQ(m.major, 98u);
  EXPECT_EQ(m.minor, 0u);
  EXPECT_EQ(m.root, "/mnt1");
  EXPECT_EQ(m.mountpoint, "/mnt/parent");
  EXPECT_EQ(m.fstype, "ext3");
  EXPECT_EQ(m.source, "/dev/root");
}

TEST(MountInfo, NoOptionalFieldsAndEmptySource) {
  std::string line = "50 1 0:60 / /mnt/x rw - tmpfs";
  MountInfoLine m;
  ASSERT_TRUE(ParseMountInfoLine(line.data(), line.size(), &m));
  EXPECT_EQ(m.fstype, "tmpfs");
  EXPECT_EQ(m.source, "");
}

TEST(MountInfo, RejectsMalformedLines) {
  for (std::string bad : {std::string(""), std::string("x 1 0:1 / / rw - ext4 a"),
                          std::string("1 2 3 / / rw - ext4 a"),  // no major:minor
                          std::string("1 2 0:1 / / rw shared:1"),  // no separator
                          std::string("1 2 0:1 / / rw -"),         // no type
                          std::string("99999999999 2 0:1 / / rw - ext4 a")}) {
    MountInfoLine m;
    EXPECT_FALSE(ParseMountInfoLine(bad.data(), bad.size(), &m)) << bad;
  }
}

TEST(MountInfo, FixtureWithNetworkAndFuseMounts) {
  const auto all = ParseAll(Fixture("mountinfo_remote.txt"));
  ASSERT_EQ(all.size(), 17u);  // one malformed line skipped
  std::map<std::string, Parsed> by_mp;
  for (const auto& p : all) by_mp[p.mountpoint] = p;
  EXPECT_EQ(by_mp.at("/mnt/nfs").fstype, "nfs4");
  EXPECT_EQ(by_mp.at("/mnt/nfs").source, "fileserver:/export/datasets");
  EXPECT_EQ(by_mp.at("/mnt/nfs").id, 30u);
  EXPECT_EQ(by_mp.at("/mnt/host").fstype, "9p");
  EXPECT_EQ(by_mp.at("/mnt/smb").fstype, "cifs");
  EXPECT_EQ(by_mp.at("/mnt/smb").source, "//nas/share");
  EXPECT_EQ(by_mp.at("/content/drive").fstype, "fuse.drive");
  EXPECT_EQ(by_mp.at("/mnt/bind").root, "/sub");
  // \040 is a space in a mount point.
  ASSERT_TRUE(by_mp.count("/mnt/with space"));
  EXPECT_EQ(by_mp.at("/mnt/with space").fstype, "xfs");
  EXPECT_EQ(by_mp.at("/").major, 254u);
  EXPECT_EQ(by_mp.at("/").minor, 1u);
}

TEST(MountInfo, ParsesThisMachinesMountTable) {
  std::ifstream in("/proc/self/mountinfo");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  const auto all = ParseAll(text);
  EXPECT_EQ(all.size(), lines);
  bool root = false;
  for (const auto& p : all) {
    if (p.mountpoint != "/") continue;
    root = true;
    struct stat st;
    ASSERT_EQ(stat("/", &st), 0);
    // st_dev of "/" is the root mount's major:minor (the last mount on "/" wins).
    if (MakeDev(p.major, p.minor) == st.st_dev) SUCCEED();
  }
  EXPECT_TRUE(root);
}

TEST(MountInfo, MakeDevMatchesGlibc) {
  for (uint32_t major : {0u, 8u, 254u, 259u, 4095u, 4096u, 70000u}) {
    for (uint32_t minor : {0u, 1u, 255u, 256u, 70000u}) {
      EXPECT_EQ(MakeDev(major, minor), static_cast<uint64_t>(makedev(major, minor)));
    }
  }
}

TEST(Filesystems, ClassifiesTheFixture) {
  const std::map<std::string, std::pair<FsClass, bool>> want = {
      {"/", {FsClass::kLocal, false}},
      {"/dev", {FsClass::kPseudo, false}},
      {"/proc", {FsClass::kPseudo, false}},
      {"/dev/shm", {FsClass::kMemory, false}},
      {"/mnt/nfs", {FsClass::kNetwork, true}},
      {"/mnt/nfs3", {FsClass::kNetwork, true}},
      {"/mnt/host", {FsClass::kVmShared, true}},
      {"/mnt/smb", {FsClass::kNetwork, true}},
      {"/mnt/smb3", {FsClass::kNetwork, true}},
      {"/content/drive", {FsClass::kFuse, true}},
      {"/mnt/gcs", {FsClass::kFuse, true}},
      {"/mnt/plainfuse", {FsClass::kFuse, true}},
      {"/var/lib/docker/overlay2/x/merged", {FsClass::kLocal, false}},
      {"/mnt/with space", {FsClass::kLocal, false}},
      {"/mnt/vfs", {FsClass::kVmShared, true}},
      {"/mnt/bindfs", {FsClass::kFuse, true}},
  };
  for (const auto& p : ParseAll(Fixture("mountinfo_remote.txt"))) {
    auto it = want.find(p.mountpoint);
    if (it == want.end()) continue;
    const auto info = ClassifyFilesystem(p.fstype, p.source);
    EXPECT_EQ(FsClassName(info.cls), FsClassName(it->second.first)) << p.mountpoint;
    EXPECT_EQ(info.slow, it->second.second) << p.mountpoint;
    EXPECT_FALSE(info.label.empty()) << p.mountpoint;
  }
}

TEST(Filesystems, NamesKnownFuseDaemons) {
  EXPECT_NE(ClassifyFilesystem("fuse.drive", "drive").label.find("Google Drive"), std::string_view::npos);
  EXPECT_NE(ClassifyFilesystem("fuse.gcsfuse", "bucket").label.find("gcsfuse"), std::string_view::npos);
  EXPECT_NE(ClassifyFilesystem("fuse", "gcsfuse").label.find("gcsfuse"), std::string_view::npos);
  EXPECT_EQ(ClassifyFilesystem("fuse.lxcfs", "lxcfs").cls, FsClass::kPseudo);
  EXPECT_EQ(ClassifyFilesystem("fuseblk", "/dev/sdc1").cls, FsClass::kLocal);
  EXPECT_EQ(ClassifyFilesystem("weirdfs", "x").cls, FsClass::kUnknown);
  EXPECT_FALSE(ClassifyFilesystem("weirdfs", "x").slow);
  EXPECT_EQ(ClassifyFilesystem("nfs4", "").cls, FsClass::kNetwork);
}

}  // namespace
