// The DWARF CFI reader (see cfi_reader.h).
#include "cfi_reader.h"

#include <elf.h>

#include <cstring>

namespace colabtrace::shim::libs {
namespace {

using Region = UnwindRegion;

bool ReadU8(const uint8_t*& p, const Region& r, uint8_t* out) {
  if (!r.Has(p, 1)) return false;
  *out = *p++;
  return true;
}

template <class T> bool ReadRaw(const uint8_t*& p, const Region& r, T* out) {
  if (!r.Has(p, sizeof(T))) return false;
  std::memcpy(out, p, sizeof(T));
  p += sizeof(T);
  return true;
}

bool ReadUleb(const uint8_t*& p, const Region& r, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t b;
    if (!ReadU8(p, r, &b)) return false;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

bool ReadSleb(const uint8_t*& p, const Region& r, int64_t* out) {
  int64_t v = 0;
  int shift = 0;
  uint8_t b;
  do {
    if (shift >= 64 || !ReadU8(p, r, &b)) return false;
    v |= static_cast<int64_t>(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  if (shift < 64 && (b & 0x40)) v |= -(static_cast<int64_t>(1) << shift);
  *out = v;
  return true;
}

constexpr uint8_t kPeOmit = 0xff;

// Reads a pointer encoded with DW_EH_PE_* `enc` (absptr, u/sdata2/4/8; pcrel, datarel).
bool ReadEncoded(const uint8_t*& p, const Region& r, uint8_t enc, uintptr_t datarel,
                 uintptr_t* out) {
  if (enc == kPeOmit) return false;
  const uint8_t* field = p;
  uintptr_t v = 0;
  switch (enc & 0x0f) {
    case 0x00: { uint64_t x; if (!ReadRaw(p, r, &x)) return false; v = x; break; }
    case 0x02: { uint16_t x; if (!ReadRaw(p, r, &x)) return false; v = x; break; }
    case 0x03: { uint32_t x; if (!ReadRaw(p, r, &x)) return false; v = x; break; }
    case 0x04: { uint64_t x; if (!ReadRaw(p, r, &x)) return false; v = x; break; }
    case 0x0a: { int16_t x; if (!ReadRaw(p, r, &x)) return false; v = static_cast<uintptr_t>(static_cast<intptr_t>(x)); break; }
    case 0x0b: { int32_t x; if (!ReadRaw(p, r, &x)) return false; v = static_cast<uintptr_t>(static_cast<intptr_t>(x)); break; }
    case 0x0c: { int64_t x; if (!ReadRaw(p, r, &x)) return false; v = static_cast<uintptr_t>(x); break; }
    case 0x01: { uint64_t x; if (!ReadUleb(p, r, &x)) return false; v = x; break; }
    case 0x09: { int64_t x; if (!ReadSleb(p, r, &x)) return false; v = static_cast<uintptr_t>(x); break; }
    default: return false;
  }
  switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += reinterpret_cast<uintptr_t>(field); break;
    case 0x30: v += datarel; break;
    default: return false;
  }
  *out = v;  // indirect (0x80) appears only for personality pointers, which we skip
  return true;
}

constexpr int kRegRsp = 7;
constexpr int kRegRa = 16;

struct CfaState {
  uint64_t cfa_reg = kRegRsp;
  int64_t cfa_off = 8;
  bool cfa_expr = false;
  bool ra_ok = true;         // RA rule is "offset(-8)"
  uint32_t saved = 0;        // registers 0..15 with a rule other than same/undefined
};

struct CieInfo {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_reg = kRegRa;
  uint8_t fde_enc = 0;  // absptr
  bool has_z = false;
  bool signal = false;
  const uint8_t* insns = nullptr;
  const uint8_t* insns_end = nullptr;
};

bool ParseCie(const uint8_t* cie, const Region& r, CieInfo* out) {
  const uint8_t* p = cie;
  uint32_t len;
  if (!ReadRaw(p, r, &len) || len == 0 || len == 0xffffffffu || !r.Has(p, len)) return false;
  const uint8_t* end = p + len;
  uint32_t id;
  if (!ReadRaw(p, r, &id) || id != 0) return false;
  uint8_t version;
  if (!ReadU8(p, r, &version) || (version != 1 && version != 3)) return false;
  const char* aug = reinterpret_cast<const char*>(p);
  while (r.Has(p, 1) && *p != 0) ++p;
  if (!ReadU8(p, r, &version)) return false;  // the NUL
  if (aug[0] == 'e' && aug[1] == 'h') p += sizeof(void*);
  int64_t da;
  if (!ReadUleb(p, r, &out->code_align) || !ReadSleb(p, r, &da)) return false;
  out->data_align = da;
  if (version == 1) {
    uint8_t ra;
    if (!ReadU8(p, r, &ra)) return false;
    out->ra_reg = ra;
  } else if (!ReadUleb(p, r, &out->ra_reg)) {
    return false;
  }
  const uint8_t* aug_end = nullptr;
  const char* a = aug;
  if (*a == 'z') {
    uint64_t alen;
    if (!ReadUleb(p, r, &alen) || !r.Has(p, alen)) return false;
    aug_end = p + alen;
    out->has_z = true;
    ++a;
  }
  for (; *a != 0; ++a) {
    if (*a == 'R') {
      if (!ReadU8(p, r, &out->fde_enc)) return false;
    } else if (*a == 'L') {
      uint8_t e;
      if (!ReadU8(p, r, &e)) return false;
    } else if (*a == 'P') {
      uint8_t e;
      uintptr_t ignored;
      if (!ReadU8(p, r, &e) || !ReadEncoded(p, r, static_cast<uint8_t>(e & 0x7f), 0, &ignored)) {
        return false;
      }
    } else if (*a == 'S') {
      out->signal = true;
    } else if (aug_end == nullptr) {
      return false;  // unknown augmentation without a length to skip it
    } else {
      break;
    }
  }
  if (aug_end != nullptr) p = aug_end;
  if (p > end) return false;
  out->insns = p;
  out->insns_end = end;
  return true;
}

// Runs a CFA program, stopping before the first row that starts after `target`.
// Returns false on anything it does not understand.
bool RunCfa(const uint8_t* p, const uint8_t* end, const Region& r, const CieInfo& cie,
            uintptr_t datarel, uintptr_t* loc, uintptr_t target, const CfaState& initial,
            CfaState* s) {
  CfaState stack[8];
  int depth = 0;
  const Region prog{p, end};
  (void)r;
  auto set_rule = [&](uint64_t reg, bool saved_to_memory, int64_t off) {
    if (reg == cie.ra_reg) {
      s->ra_ok = saved_to_memory && off == -8;
    } else if (reg < 16) {
      if (saved_to_memory) {
        s->saved |= 1u << reg;
      } else {
        s->saved &= ~(1u << reg);
      }
    }
  };
  auto restore = [&](uint64_t reg) {
    if (reg == cie.ra_reg) {
      s->ra_ok = initial.ra_ok;
    } else if (reg < 16) {
      s->saved = (s->saved & ~(1u << reg)) | (initial.saved & (1u << reg));
    }
  };
  auto advance = [&](uint64_t delta) { *loc += delta * cie.code_align; return *loc <= target; };
  while (p < end) {
    uint8_t op;
    if (!ReadU8(p, prog, &op)) return false;
    const uint8_t hi = op & 0xc0, lo = op & 0x3f;
    uint64_t a = 0, b = 0;
    int64_t sa = 0;
    if (hi == 0x40) {
      if (!advance(lo)) return true;
      continue;
    }
    if (hi == 0x80) {
      if (!ReadUleb(p, prog, &a)) return false;
      set_rule(lo, true, static_cast<int64_t>(a) * cie.data_align);
      continue;
    }
    if (hi == 0xc0) {
      restore(lo);
      continue;
    }
    switch (op) {
      case 0x00: break;  // nop
      case 0x01: {       // set_loc
        uintptr_t to;
        if (!ReadEncoded(p, prog, cie.fde_enc, datarel, &to)) return false;
        if (to > target) return true;
        *loc = to;
        break;
      }
      case 0x02: { uint8_t d; if (!ReadU8(p, prog, &d)) return false; if (!advance(d)) return true; break; }
      case 0x03: { uint16_t d; if (!ReadRaw(p, prog, &d)) return false; if (!advance(d)) return true; break; }
      case 0x04: { uint32_t d; if (!ReadRaw(p, prog, &d)) return false; if (!advance(d)) return true; break; }
      case 0x05:  // offset_extended
        if (!ReadUleb(p, prog, &a) || !ReadUleb(p, prog, &b)) return false;
        set_rule(a, true, static_cast<int64_t>(b) * cie.data_align);
        break;
      case 0x06:  // restore_extended
        if (!ReadUleb(p, prog, &a)) return false;
        restore(a);
        break;
      case 0x07:  // undefined
      case 0x08:  // same_value
        if (!ReadUleb(p, prog, &a)) return false;
        set_rule(a, false, 0);
        if (a == cie.ra_reg) s->ra_ok = false;
        break;
      case 0x09:  // register
        if (!ReadUleb(p, prog, &a) || !ReadUleb(p, prog, &b)) return false;
        set_rule(a, true, 1);  // saved elsewhere: not "offset -8"
        break;
      case 0x0a:  // remember_state
        if (depth == 8) return false;
        stack[depth++] = *s;
        break;
      case 0x0b:  // restore_state
        if (depth == 0) return false;
        *s = stack[--depth];
        break;
      case 0x0c:  // def_cfa
        if (!ReadUleb(p, prog, &a) || !ReadUleb(p, prog, &b)) return false;
        s->cfa_reg = a;
        s->cfa_off = static_cast<int64_t>(b);
        s->cfa_expr = false;
        break;
      case 0x0d:  // def_cfa_register
        if (!ReadUleb(p, prog, &a)) return false;
        s->cfa_reg = a;
        s->cfa_expr = false;
        break;
      case 0x0e:  // def_cfa_offset
        if (!ReadUleb(p, prog, &a)) return false;
        s->cfa_off = static_cast<int64_t>(a);
        break;
      case 0x0f:  // def_cfa_expression
        if (!ReadUleb(p, prog, &a) || !prog.Has(p, a)) return false;
        p += a;
        s->cfa_expr = true;
        break;
      case 0x10:  // expression
      case 0x16:  // val_expression
        if (!ReadUleb(p, prog, &a) || !ReadUleb(p, prog, &b) || !prog.Has(p, b)) return false;
        p += b;
        set_rule(a, true, 1);
        break;
      case 0x11:  // offset_extended_sf
        if (!ReadUleb(p, prog, &a) || !ReadSleb(p, prog, &sa)) return false;
        set_rule(a, true, sa * cie.data_align);
        break;
      case 0x12:  // def_cfa_sf
        if (!ReadUleb(p, prog, &a) || !ReadSleb(p, prog, &sa)) return false;
        s->cfa_reg = a;
        s->cfa_off = sa * cie.data_align;
        s->cfa_expr = false;
        break;
      case 0x13:  // def_cfa_offset_sf
        if (!ReadSleb(p, prog, &sa)) return false;
        s->cfa_off = sa * cie.data_align;
        break;
      case 0x14:  // val_offset
        if (!ReadUleb(p, prog, &a) || !ReadUleb(p, prog, &b)) return false;
        set_rule(a, true, 1);
        break;
      case 0x15:  // val_offset_sf
        if (!ReadUleb(p, prog, &a) || !ReadSleb(p, prog, &sa)) return false;
        set_rule(a, true, 1);
        break;
      case 0x2e:  // GNU_args_size
        if (!ReadUleb(p, prog, &a)) return false;
        break;
      case 0x2f:  // GNU_negative_offset_extended
        if (!ReadUleb(p, prog, &a) || !ReadUleb(p, prog, &b)) return false;
        set_rule(a, true, -static_cast<int64_t>(b) * cie.data_align);
        break;
      default:
        return false;
    }
  }
  return true;
}

}  // namespace

bool OpenUnwindTable(const struct dl_phdr_info* info, UnwindTable* t) {
  const ElfW(Phdr)* eh = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) eh = &info->dlpi_phdr[i];
  }
  if (eh == nullptr) return false;
  const uintptr_t hdr = info->dlpi_addr + eh->p_vaddr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_R) && hdr >= lo && hdr < hi) {
      t->region = {reinterpret_cast<const uint8_t*>(lo), reinterpret_cast<const uint8_t*>(lo + ph.p_filesz)};
    }
  }
  if (t->region.begin == nullptr) return false;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(hdr);
  uint8_t version, frame_enc, count_enc, table_enc;
  if (!ReadU8(p, t->region, &version) || version != 1 || !ReadU8(p, t->region, &frame_enc) ||
      !ReadU8(p, t->region, &count_enc) || !ReadU8(p, t->region, &table_enc) ||
      table_enc != 0x3b /* datarel | sdata4 */) {
    return false;
  }
  uintptr_t frame, count;
  if (!ReadEncoded(p, t->region, frame_enc, hdr, &frame) ||
      !ReadEncoded(p, t->region, count_enc, hdr, &count)) {
    return false;
  }
  // count * 8 bytes of table, without letting a hostile count wrap that product.
  if (count > static_cast<uint64_t>(t->region.end - p) / 8) return false;
  t->hdr = reinterpret_cast<const uint8_t*>(hdr);
  t->table = p;
  t->count = count;
  return true;
}

bool EntryLikeRowAt(const UnwindTable& t, uintptr_t pc) {
  const uintptr_t hdr = reinterpret_cast<uintptr_t>(t.hdr);
  // Binary search for the last entry with initial_loc <= pc.
  uint64_t lo = 0, hi = t.count;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    int32_t loc;
    std::memcpy(&loc, t.table + mid * 8, 4);
    if (hdr + static_cast<intptr_t>(loc) <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return false;
  int32_t fde_rel;
  std::memcpy(&fde_rel, t.table + (lo - 1) * 8 + 4, 4);
  const uint8_t* fde = reinterpret_cast<const uint8_t*>(hdr + static_cast<intptr_t>(fde_rel));
  const Region& r = t.region;
  const uint8_t* p = fde;
  uint32_t len, cie_off;
  if (!ReadRaw(p, r, &len) || len == 0 || len == 0xffffffffu || !r.Has(p, len)) return false;
  const uint8_t* end = p + len;
  const uint8_t* cie_field = p;
  if (!ReadRaw(p, r, &cie_off) || cie_off == 0) return false;
  CieInfo cie;
  if (!ParseCie(cie_field - cie_off, r, &cie) || cie.signal) return false;
  uintptr_t begin, range;
  if (!ReadEncoded(p, r, cie.fde_enc, hdr, &begin) ||
      !ReadEncoded(p, r, static_cast<uint8_t>(cie.fde_enc & 0x0f), 0, &range)) {
    return false;
  }
  if (pc < begin || pc >= begin + range) return false;
  if (cie.has_z) {
    uint64_t alen;
    if (!ReadUleb(p, r, &alen) || !r.Has(p, alen)) return false;
    p += alen;
  }
  if (p > end) return false;
  CfaState initial;
  initial.cfa_off = 0;
  initial.ra_ok = false;
  uintptr_t loc = begin;
  CfaState s = initial;
  if (!RunCfa(cie.insns, cie.insns_end, r, cie, hdr, &loc, ~uintptr_t{0}, initial, &s)) return false;
  initial = s;  // DW_CFA_restore goes back to the CIE's rules
  loc = begin;
  if (!RunCfa(p, end, r, cie, hdr, &loc, pc, initial, &s)) return false;
  return !s.cfa_expr && s.cfa_reg == kRegRsp && s.cfa_off == 8 && s.ra_ok && s.saved == 0;
}

}  // namespace colabtrace::shim::libs
