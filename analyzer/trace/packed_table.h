// PackedTable: a time-ordered table of one high-volume record type (the file I/O records),
// kept varint-packed instead of as structs, and decoded as it is iterated.
//
// Why (issue 12): a decoded Event<IoReadAt> is 56 bytes (every field 64-bit, plus tid and
// image) where the trace spends about 10 on it, so a 3,000,000-pread trace of 30 MiB took
// 168 MiB of tables. Packed, a record costs about what it costs on disk: 3,000,000 preads
// take about 27 MiB.
//
// Layout: records one after another, each
//   varint(h)  h = zigzag(ts - previous ts) << 1 | changed   (ts in ticks, wrapping)
//   if changed: varint(tid), varint(image), one byte: bit 63 of the zigzag delta
//   the fields in record order: varint(value), zigzag for signed (FieldKind::kI) fields
// "changed" is set when the tid or image differs from the previous record's (or the delta
// needs its 64th bit, which only a hostile trace's times do). A checkpoint every
// kCheckpointEvery records (the decoder's state before it) gives indexed access and a
// binary search by time. The bytes are our own encoding of records that already decoded,
// so reading them back needs no bounds checks beyond the table's size.
//
// Times are stored in ticks, as decoded; iteration converts ts and the Dur fields to
// nanoseconds with the trace's TickClock (set once the Clock records are known), so a
// record reads exactly as it did when tables held converted structs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>
#include <vector>

#include "colabtrace/format/records.h"
#include "colabtrace/format/wire.h"

namespace colabtrace::analyzer {

// A decoded record plus where it came from.
template <class R> struct Event : R {
  using Record = R;
  uint32_t tid = 0;    // the thread that wrote it
  uint32_t image = 0;  // the exec image (0 = the first program this process ran)
};

// Ticks to CLOCK_MONOTONIC nanoseconds for one trace (from its Clock records).
struct TickClock {
  // Fixed-point integer math (ns = n0 + (ticks - t0) * scale / 2^32) where the values
  // allow, far cheaper than long double for millions of records; long double, saturated,
  // for a hostile trace's values.
  bool fixed_ok = false;
  uint64_t scale = 0, t0i = 0, n0i = 0;
  long double t0 = 0, n0 = 0, ns_per_tick = 1.0L;

  TickClock() = default;
  TickClock(long double t0_in, long double n0_in, long double ns_per_tick_in)
      : t0(t0_in), n0(n0_in), ns_per_tick(ns_per_tick_in) {
    const long double scale_ld = ns_per_tick * 4294967296.0L;
    fixed_ok = scale_ld > 0 && scale_ld < 1.8e19L && t0 >= 0 && n0 >= 0 && t0 < 1.8e19L &&
               n0 < 1.8e19L;
    scale = fixed_ok ? static_cast<uint64_t>(scale_ld) : 0;
    t0i = fixed_ok ? static_cast<uint64_t>(t0) : 0;
    n0i = fixed_ok ? static_cast<uint64_t>(n0) : 0;
  }

  // Traces are untrusted: a hostile Clock pair can make any product overflow, and
  // converting an out-of-range long double to uint64_t is undefined. Saturate.
  static uint64_t Saturate(long double v) {
    if (!(v > 0)) return 0;  // also NaN
    if (v >= 18446744073709551615.0L) return UINT64_MAX;
    return static_cast<uint64_t>(v);
  }
  uint64_t Fixed(uint64_t ticks_delta) const {
    const unsigned __int128 v = (static_cast<unsigned __int128>(ticks_delta) * scale) >> 32;
    return v > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(v);
  }
  uint64_t ToNs(uint64_t ticks) const {
    if (!fixed_ok) return Saturate(n0 + (static_cast<long double>(ticks) - t0) * ns_per_tick);
    if (ticks >= t0i) {
      const uint64_t d = Fixed(ticks - t0i);
      return d > UINT64_MAX - n0i ? UINT64_MAX : n0i + d;
    }
    const uint64_t d = Fixed(t0i - ticks);
    return d >= n0i ? 0 : n0i - d;
  }
  uint64_t DurNs(uint64_t ticks) const {
    return fixed_ok ? Fixed(ticks) : Saturate(static_cast<long double>(ticks) * ns_per_tick);
  }
  // ts and every Dur field of r, ticks to nanoseconds.
  template <class R> void Convert(R& r) const {
    r.ts = ToNs(r.ts);
    r.Visit([&](const char*, auto tag, auto& value) {
      if constexpr (decltype(tag)::kind == format::FieldKind::kDur) value = DurNs(value);
    });
  }
};

template <class R> class PackedTable {
 public:
  using value_type = Event<R>;
  static constexpr size_t kCheckpointEvery = 64;

  // Forward iteration, decoding one record per step. Converted: ts and durations in ns
  // (the table's clock); raw: in ticks, as stored.
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Event<R>;
    using difference_type = std::ptrdiff_t;
    using pointer = const Event<R>*;
    using reference = const Event<R>&;

    const_iterator() = default;
    const Event<R>& operator*() const { return ev_; }
    const Event<R>* operator->() const { return &ev_; }
    const_iterator& operator++() {
      ++index_;
      Load();
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const const_iterator& o) const { return index_ == o.index_; }
    size_t index() const { return index_; }

   private:
    friend class PackedTable;
    const_iterator(const PackedTable* t, size_t index, bool convert) : t_(t), index_(index), convert_(convert) {
      if (index_ >= t_->size_) {
        index_ = t_->size_;
        return;
      }
      const Checkpoint& c = t_->checkpoints_[index_ / kCheckpointEvery];
      p_ = t_->bytes_.data() + c.offset;
      raw_ts_ = c.ts;
      ev_.tid = c.tid;
      ev_.image = c.image;
      for (size_t skip = index_ % kCheckpointEvery; skip > 0; --skip) DecodeOne();
      Load();
    }
    void Load() {
      if (index_ >= t_->size_) return;
      DecodeOne();
      if (convert_) t_->clock_.Convert(ev_);
    }
    // Decodes the record at p_ into ev_ (in ticks) and moves p_ past it.
    void DecodeOne() {
      uint64_t h = Get();
      uint64_t z = h >> 1;
      if (h & 1) {
        ev_.tid = static_cast<uint32_t>(Get());
        ev_.image = static_cast<uint32_t>(Get());
        z |= static_cast<uint64_t>(*p_++) << 63;
      }
      raw_ts_ += static_cast<uint64_t>(format::UnZigZag(z));
      ev_.ts = raw_ts_;
      static_cast<R&>(ev_).Visit([&](const char*, auto tag, auto& value) {
        if constexpr (decltype(tag)::kind == format::FieldKind::kI) {
          value = format::UnZigZag(Get());
        } else {
          value = Get();
        }
      });
    }
    uint64_t Get() {
      uint64_t v = 0;
      format::GetVarint(&p_, p_ + format::kMaxVarintBytes, &v);
      return v;
    }

    const PackedTable* t_ = nullptr;
    const uint8_t* p_ = nullptr;
    size_t index_ = 0;
    bool convert_ = false;
    uint64_t raw_ts_ = 0;  // the current record's ts in ticks
    Event<R> ev_{};
  };

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const_iterator begin() const { return const_iterator(this, 0, true); }
  const_iterator end() const { return const_iterator(this, size_, true); }
  // Record i, converted (a checkpoint, then up to kCheckpointEvery - 1 records decoded).
  Event<R> operator[](size_t i) const { return *const_iterator(this, i, true); }
  const_iterator At(size_t i) const { return const_iterator(this, i, true); }
  const_iterator RawAt(size_t i) const { return const_iterator(this, i, false); }
  const_iterator RawEnd() const { return const_iterator(this, size_, false); }

  // The first record with ts (ns) > ns; the table must be in time order.
  const_iterator UpperBound(uint64_t ns) const {
    // The last checkpoint whose record is at or before ns, then step.
    size_t lo = 0, hi = checkpoints_.size();  // checkpoints [0, lo) have ts <= ns
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (At(mid * kCheckpointEvery)->ts <= ns) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    const_iterator it = At(lo == 0 ? 0 : (lo - 1) * kCheckpointEvery);
    while (it != end() && it->ts <= ns) ++it;
    return it;
  }

  uint64_t max_ticks() const { return max_ticks_; }
  const TickClock& clock() const { return clock_; }
  void SetClock(const TickClock& c) { clock_ = c; }

  // Room for `records` records of `payload_bytes` wire payload in all (an estimate: the
  // table still grows past it).
  void Reserve(size_t records, size_t payload_bytes) {
    bytes_.reserve(payload_bytes + 2 * records + 16);
    checkpoints_.reserve(records / kCheckpointEvery + 1);
  }

  // Appends r (times in ticks).
  void Append(const R& r, uint32_t tid, uint32_t image) {
    if (size_ % kCheckpointEvery == 0) {
      checkpoints_.push_back({bytes_.size(), last_ts_, last_tid_, last_image_});
    }
    uint8_t buf[kMaxRecordBytes];
    uint8_t* p = buf;
    const uint64_t z = format::ZigZag(static_cast<int64_t>(r.ts - last_ts_));
    const bool changed = tid != last_tid_ || image != last_image_ || (z >> 63) != 0;
    p = format::PutVarint(p, (z << 1) | (changed ? 1 : 0));
    if (changed) {
      p = format::PutVarint(p, tid);
      p = format::PutVarint(p, image);
      *p++ = static_cast<uint8_t>(z >> 63);
    }
    r.Visit([&p](const char*, auto tag, const auto& value) {
      static_assert(decltype(tag)::kind != format::FieldKind::kBytes, "packed records hold no bytes");
      if constexpr (decltype(tag)::kind == format::FieldKind::kI) {
        p = format::PutVarint(p, format::ZigZag(value));
      } else {
        p = format::PutVarint(p, value);
      }
    });
    bytes_.insert(bytes_.end(), buf, p);
    last_ts_ = r.ts;
    last_tid_ = tid;
    last_image_ = image;
    max_ticks_ = std::max(max_ticks_, r.ts);
    ++size_;
  }

  // Bytes of packed records.
  size_t byte_size() const { return bytes_.size(); }

 private:
  struct Checkpoint {
    size_t offset;  // of the record
    uint64_t ts;    // the previous record's (raw ticks), tid and image
    uint32_t tid, image;
  };
  // Header, tid, image and the delta's top bit, then at most one 64-bit field per 8 bytes
  // of R (ts among them).
  static constexpr size_t kMaxRecordBytes =
      3 * format::kMaxVarintBytes + 1 + sizeof(R) / 8 * format::kMaxVarintBytes;

  std::vector<uint8_t> bytes_;
  std::vector<Checkpoint> checkpoints_;
  size_t size_ = 0;
  uint64_t last_ts_ = 0, max_ticks_ = 0;
  uint32_t last_tid_ = 0, last_image_ = 0;
  TickClock clock_;
};

// The record types kept packed: the file I/O records a program makes millions of. IoOpen
// (looked up by index) and the rest stay vectors of structs.
template <class R> inline constexpr bool kPackedRecord =
    std::is_same_v<R, format::IoRead> || std::is_same_v<R, format::IoReadAt> ||
    std::is_same_v<R, format::IoWrite> || std::is_same_v<R, format::IoClose> ||
    std::is_same_v<R, format::IoDup> || std::is_same_v<R, format::IoStat> ||
    std::is_same_v<R, format::IoDir> || std::is_same_v<R, format::IoMmap> ||
    std::is_same_v<R, format::IoCopy> || std::is_same_v<R, format::IoFsync> ||
    std::is_same_v<R, format::IoSeek>;

// The table that holds records of type R in a ProcessTrace.
template <class R>
using TableOf = std::conditional_t<kPackedRecord<R>, PackedTable<R>, std::vector<Event<R>>>;

// The first record of a time-ordered table with ts > ns.
template <class R>
typename std::vector<Event<R>>::const_iterator UpperBoundTs(const std::vector<Event<R>>& table, uint64_t ns) {
  return std::upper_bound(table.begin(), table.end(), ns,
                          [](uint64_t ts, const Event<R>& e) { return ts < e.ts; });
}
template <class R>
typename PackedTable<R>::const_iterator UpperBoundTs(const PackedTable<R>& table, uint64_t ns) {
  return table.UpperBound(ns);
}

}  // namespace colabtrace::analyzer
