// Filesystem classification: what kind of storage a mount is, from its mountinfo type
// and source. The I/O findings key on it (io.network-filesystem, io.reread) and the
// report prints its label.
#pragma once

#include <string_view>

namespace colabtrace::analyzer::io {

enum class FsClass {
  kUnknown,   // no mount known for the path
  kLocal,     // a local block device or a container layer on one (ext4, xfs, overlay)
  kMemory,    // RAM-backed (tmpfs, ramfs)
  kNetwork,   // a network filesystem (NFS, CIFS/SMB, Ceph, Lustre, ...)
  kFuse,      // a FUSE filesystem (Colab's Drive, gcsfuse, s3fs, rclone, sshfs, bindfs)
  kVmShared,  // a host directory shared into a VM (9p, virtiofs)
  kPseudo,    // kernel pseudo filesystems (proc, sysfs, devtmpfs, cgroup, ...)
};

struct FsInfo {
  FsClass cls = FsClass::kUnknown;
  std::string_view label;  // e.g. "Google Drive (Colab)", "NFS", "local disk"
  // Each operation may cross a network or a user-space daemon: per-file latency is
  // milliseconds, not microseconds. True for kNetwork, kFuse and kVmShared.
  bool slow = false;
};

// Classifies a mount by its type ("ext4", "fuse.drive", "nfs4", "fuse") and source
// ("/dev/vda", "server:/export", "gcsfuse"). Never fails: unknown types are kUnknown.
FsInfo ClassifyFilesystem(std::string_view fstype, std::string_view source);

// "local", "memory", "network", "fuse", "vm-shared", "pseudo" or "unknown".
std::string_view FsClassName(FsClass c);

}  // namespace colabtrace::analyzer::io
