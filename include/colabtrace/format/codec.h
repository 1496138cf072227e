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

// Writes r's payload (ts delta against prev_ts, then the fields) at p; returns its end.
// A ts earlier than prev_ts is written as delta 0.
template <class R> uint8_t* EncodePayload(const R& r, uint64_t prev_ts, uint8_t* p) {
  p = PutVarint(p, r.ts > prev_ts ? r.ts - prev_ts : 0);
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

// Writes r framed at dst, except the type byte dst[0], which the caller stores last to
// commit the record. dst must have MaxEncodedSize(r) bytes. Returns the framed size.
template <class R> size_t EncodeRecordUncommitted(const R& r, uint64_t prev_ts, uint8_t* dst) {
  // Assume a one-byte length; move the payload if it turns out longer.
  uint8_t* payload = dst + 2;
  const size_t len = static_cast<size_t>(EncodePayload(r, prev_ts, payload) - payload);
  uint8_t len_buf[kMaxVarintBytes];
  const size_t len_bytes = static_cast<size_t>(PutVarint(len_buf, len) - len_buf);
  if (len_bytes != 1) std::memmove(dst + 1 + len_bytes, payload, len);
  std::memcpy(dst + 1, len_buf, len_bytes);
  return 1 + len_bytes + len;
}

// Decodes a payload [p, end) into *out. Fields missing at the end stay zero; bytes past
// the known fields are ignored. Returns false if the payload is malformed.
template <class R>
bool DecodePayload(const uint8_t* p, const uint8_t* end, uint64_t prev_ts, R* out) {
  uint64_t delta = 0;
  if (!GetVarint(&p, end, &delta)) return false;
  out->ts = prev_ts + delta;
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
