// colabtrace trace format: encoding and decoding of one record.
//
// The shim calls EncodeRecord() into its thread's chunk and then commits the type byte;
// the reader calls DecodePayload() on the framed bytes. Both are driven by the field
// lists in records.h, so the writer and the reader cannot drift apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "colabtrace/format/records.h"
#include "colabtrace/format/wire.h"

namespace colabtrace::format {

// An upper bound on the framed size of r (type byte, length, ts delta and fields).
template <class R> constexpr size_t MaxEncodedSize(const R& r) {
  size_t n = 1 + kMaxVarintBytes + kMaxVarintBytes;
  r.Visit([&n](const char*, auto tag, const auto& value) {
    if constexpr (decltype(tag)::kind == FieldKind::kBytes) {
      n += kMaxVarintBytes + value.size;
    } else {
      n += kMaxVarintBytes;
    }
  });
  return n;
}

// Set in a committed type byte when the record's ts is *earlier* than the previous
// record's: ts_delta is then subtracted. This happens when events nested inside a call
// (a library the call loaded, say) are written before the call's own record, whose ts
// is the call's start. Record type codes are all below 128.
inline constexpr uint8_t kTypeTsBack = 0x80;

// The type byte that commits r after a record with timestamp prev_ts.
template <class R> constexpr uint8_t CommittedType(const R& r, uint64_t prev_ts) {
  return static_cast<uint8_t>(static_cast<uint8_t>(R::kType) | (r.ts < prev_ts ? kTypeTsBack : 0));
}

// Writes r's payload (|ts - prev_ts|, then the fields) at p; returns its end. The sign of
// the delta travels in the type byte (CommittedType).
template <class R> uint8_t* EncodePayload(const R& r, uint64_t prev_ts, uint8_t* p) {
  p = PutVarint(p, r.ts >= prev_ts ? r.ts - prev_ts : prev_ts - r.ts);
  r.Visit([&p](const char*, auto tag, const auto& value) {
    constexpr FieldKind kKind = decltype(tag)::kind;
    if constexpr (kKind == FieldKind::kBytes) {
      p = PutVarint(p, value.size);
      if (value.size != 0) std::memcpy(p, value.data, value.size);
      p += value.size;
    } else if constexpr (kKind == FieldKind::kI) {
      p = PutVarint(p, ZigZag(value));
    } else {
      p = PutVarint(p, value);
    }
  });
  return p;
}

// Writes r framed at dst, except the type byte dst[0], which the caller stores last
// (CommittedType(r, prev_ts)) to commit the record. dst must have MaxEncodedSize(r) bytes. Returns the framed size.
template <class R> size_t EncodeRecordUncommitted(const R& r, uint64_t prev_ts, uint8_t* dst) {
  // Assume a one-byte length; move the payload if it turns out longer.
  uint8_t* payload = dst + 2;
  const size_t len = static_cast<size_t>(EncodePayload(r, prev_ts, payload) - payload);
  if (__builtin_expect(len < 0x80, 1)) {  // every hot record: a one-byte length, stored directly
    dst[1] = static_cast<uint8_t>(len);
    return 2 + len;
  }
  uint8_t len_buf[kMaxVarintBytes];
  const size_t len_bytes = static_cast<size_t>(PutVarint(len_buf, len) - len_buf);
  if (len_bytes != 1) std::memmove(dst + 1 + len_bytes, payload, len);
  std::memcpy(dst + 1, len_buf, len_bytes);
  return 1 + len_bytes + len;
}

// Decodes a payload [p, end) into *out. ts_back comes from the type byte
// (kTypeTsBack): the delta is then subtracted. Fields missing at the end stay zero; bytes
// past the known fields are ignored. Returns false if the payload is malformed.
template <class R>
bool DecodePayload(const uint8_t* p, const uint8_t* end, uint64_t prev_ts, R* out,
                   bool ts_back = false) {
  uint64_t delta = 0;
  if (!GetVarint(&p, end, &delta)) return false;
  out->ts = ts_back ? (delta > prev_ts ? 0 : prev_ts - delta) : prev_ts + delta;
  bool ok = true;
  out->Visit([&](const char*, auto tag, auto& value) {
    if (!ok || p == end) return;  // older writer: remaining fields stay zero
    constexpr FieldKind kKind = decltype(tag)::kind;
    uint64_t v = 0;
    if (!GetVarint(&p, end, &v)) {
      ok = false;
      return;
    }
    if constexpr (kKind == FieldKind::kBytes) {
      if (v > static_cast<uint64_t>(end - p)) {
        ok = false;
        return;
      }
      value.data = p;
      value.size = static_cast<uint32_t>(v);
      p += v;
    } else if constexpr (kKind == FieldKind::kI) {
      value = UnZigZag(v);
    } else {
      value = v;
    }
  });
  return ok;
}

}  // namespace colabtrace::format
