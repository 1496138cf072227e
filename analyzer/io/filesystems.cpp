#include "io/filesystems.h"

#include <array>
#include <utility>

namespace colabtrace::analyzer::io {
namespace {

struct Known {
  std::string_view type;
  FsClass cls;
  std::string_view label;
};

// Exact type names. FUSE types ("fuse.<subtype>") are handled after this table.
constexpr std::array kKnown = {
    Known{"ext4", FsClass::kLocal, "local disk (ext4)"},
    Known{"ext3", FsClass::kLocal, "local disk (ext3)"},
    Known{"ext2", FsClass::kLocal, "local disk (ext2)"},
    Known{"xfs", FsClass::kLocal, "local disk (xfs)"},
    Known{"btrfs", FsClass::kLocal, "local disk (btrfs)"},
    Known{"f2fs", FsClass::kLocal, "local disk (f2fs)"},
    Known{"zfs", FsClass::kLocal, "local disk (zfs)"},
    Known{"jfs", FsClass::kLocal, "local disk (jfs)"},
    Known{"vfat", FsClass::kLocal, "local disk (vfat)"},
    Known{"exfat", FsClass::kLocal, "local disk (exfat)"},
    Known{"ntfs", FsClass::kLocal, "local disk (ntfs)"},
    Known{"ntfs3", FsClass::kLocal, "local disk (ntfs3)"},
    Known{"iso9660", FsClass::kLocal, "read-only image (iso9660)"},
    Known{"squashfs", FsClass::kLocal, "read-only image (squashfs)"},
    Known{"erofs", FsClass::kLocal, "read-only image (erofs)"},
    Known{"overlay", FsClass::kLocal, "container overlay (overlay)"},
    Known{"aufs", FsClass::kLocal, "container overlay (aufs)"},
    Known{"fuseblk", FsClass::kLocal, "local disk via FUSE (fuseblk)"},
    Known{"tmpfs", FsClass::kMemory, "memory (tmpfs)"},
    Known{"ramfs", FsClass::kMemory, "memory (ramfs)"},
    Known{"hugetlbfs", FsClass::kMemory, "memory (hugetlbfs)"},
    Known{"nfs", FsClass::kNetwork, "NFS"},
    Known{"nfs4", FsClass::kNetwork, "NFS v4"},
    Known{"cifs", FsClass::kNetwork, "CIFS/SMB"},
    Known{"smb3", FsClass::kNetwork, "SMB3"},
    Known{"smbfs", FsClass::kNetwork, "SMB"},
    Known{"ceph", FsClass::kNetwork, "CephFS"},
    Known{"glusterfs", FsClass::kNetwork, "GlusterFS"},
    Known{"lustre", FsClass::kNetwork, "Lustre"},
    Known{"gpfs", FsClass::kNetwork, "GPFS (Spectrum Scale)"},
    Known{"beegfs", FsClass::kNetwork, "BeeGFS"},
    Known{"afs", FsClass::kNetwork, "AFS"},
    Known{"ocfs2", FsClass::kNetwork, "OCFS2"},
    Known{"9p", FsClass::kVmShared, "9p (host directory shared into the VM)"},
    Known{"virtiofs", FsClass::kVmShared, "virtiofs (host directory shared into the VM)"},
    Known{"vboxsf", FsClass::kVmShared, "VirtualBox shared folder"},
    Known{"proc", FsClass::kPseudo, "kernel (proc)"},
    Known{"sysfs", FsClass::kPseudo, "kernel (sysfs)"},
    Known{"devtmpfs", FsClass::kPseudo, "devices (devtmpfs)"},
    Known{"devpts", FsClass::kPseudo, "terminals (devpts)"},
    Known{"cgroup", FsClass::kPseudo, "kernel (cgroup)"},
    Known{"cgroup2", FsClass::kPseudo, "kernel (cgroup2)"},
    Known{"debugfs", FsClass::kPseudo, "kernel (debugfs)"},
    Known{"tracefs", FsClass::kPseudo, "kernel (tracefs)"},
    Known{"securityfs", FsClass::kPseudo, "kernel (securityfs)"},
    Known{"pstore", FsClass::kPseudo, "kernel (pstore)"},
    Known{"bpf", FsClass::kPseudo, "kernel (bpf)"},
    Known{"mqueue", FsClass::kPseudo, "kernel (mqueue)"},
    Known{"configfs", FsClass::kPseudo, "kernel (configfs)"},
    Known{"fusectl", FsClass::kPseudo, "kernel (fusectl)"},
    Known{"binfmt_misc", FsClass::kPseudo, "kernel (binfmt_misc)"},
    Known{"nsfs", FsClass::kPseudo, "kernel (nsfs)"},
    Known{"autofs", FsClass::kPseudo, "automounter (autofs)"},
    Known{"rpc_pipefs", FsClass::kPseudo, "kernel (rpc_pipefs)"},
    Known{"efivarfs", FsClass::kPseudo, "kernel (efivarfs)"},
    Known{"selinuxfs", FsClass::kPseudo, "kernel (selinuxfs)"},
};

// FUSE subtypes worth a friendly name. Anything else fuse.* is "FUSE (<subtype>)".
struct KnownFuse {
  std::string_view subtype;
  FsClass cls;
  std::string_view label;
};
constexpr std::array kKnownFuse = {
    KnownFuse{"drive", FsClass::kFuse, "Google Drive (Colab, fuse.drive)"},
    KnownFuse{"gcsfuse", FsClass::kFuse, "Cloud Storage FUSE (gcsfuse)"},
    KnownFuse{"s3fs", FsClass::kFuse, "Amazon S3 (s3fs)"},
    KnownFuse{"goofys", FsClass::kFuse, "Amazon S3 (goofys)"},
    KnownFuse{"mountpoint-s3", FsClass::kFuse, "Amazon S3 (mountpoint-s3)"},
    KnownFuse{"blobfuse", FsClass::kFuse, "Azure Blob (blobfuse)"},
    KnownFuse{"blobfuse2", FsClass::kFuse, "Azure Blob (blobfuse2)"},
    KnownFuse{"rclone", FsClass::kFuse, "rclone remote"},
    KnownFuse{"sshfs", FsClass::kFuse, "SSHFS"},
    KnownFuse{"juicefs", FsClass::kFuse, "JuiceFS"},
    KnownFuse{"bindfs", FsClass::kFuse, "bindfs (FUSE)"},
    KnownFuse{"lxcfs", FsClass::kPseudo, "container /proc view (lxcfs)"},
    KnownFuse{"portal", FsClass::kPseudo, "desktop portal (FUSE)"},
    KnownFuse{"gvfsd-fuse", FsClass::kFuse, "GNOME virtual filesystem (FUSE)"},
};

}  // namespace

FsInfo ClassifyFilesystem(std::string_view fstype, std::string_view source) {
  FsInfo info;
  for (const Known& k : kKnown) {
    if (k.type == fstype) {
      info.cls = k.cls;
      info.label = k.label;
      break;
    }
  }
  if (info.cls == FsClass::kUnknown && (fstype == "fuse" || fstype.starts_with("fuse."))) {
    // "fuse.<subtype>" names the daemon; plain "fuse" often has the daemon as source
    // (gcsfuse mounts show "gcsfuse" or the bucket name there).
    const std::string_view sub = fstype == "fuse" ? std::string_view() : fstype.substr(5);
    info.cls = FsClass::kFuse;
    info.label = "FUSE";
    for (const KnownFuse& k : kKnownFuse) {
      if (k.subtype == sub || (sub.empty() && k.subtype == source)) {
        info.cls = k.cls;
        info.label = k.label;
        break;
      }
    }
  }
  if (info.cls == FsClass::kUnknown && fstype.starts_with("nfs")) {
    info.cls = FsClass::kNetwork;
    info.label = "NFS";
  }
  if (info.cls == FsClass::kUnknown && !fstype.empty()) info.label = "other";
  info.slow = info.cls == FsClass::kNetwork || info.cls == FsClass::kFuse ||
              info.cls == FsClass::kVmShared;
  return info;
}

std::string_view FsClassName(FsClass c) {
  switch (c) {
    case FsClass::kLocal: return "local";
    case FsClass::kMemory: return "memory";
    case FsClass::kNetwork: return "network";
    case FsClass::kFuse: return "fuse";
    case FsClass::kVmShared: return "vm-shared";
    case FsClass::kPseudo: return "pseudo";
    case FsClass::kUnknown: break;
  }
  return "unknown";
}

}  // namespace colabtrace::analyzer::io
