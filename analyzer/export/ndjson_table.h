// NdjsonTable: one table of `colabtrace export --format ndjson`, a file of JSON objects,
// one per line (what DuckDB's read_ndjson_auto, Spark's spark.read.json and pandas'
// read_json(lines=True) load).
//
// A table is written beside its final name and renamed into place by Commit(), so a
// reader never sees half a table. Rows are built with NdjsonRow, which writes the JSON
// text directly (no DOM): a fleet's millions of GPU events cost one string each.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/json.h"

namespace colabtrace::analyzer {

// One row: a JSON object built field by field. Keys are written as given (they are
// column names chosen here, never trace text); every string value is escaped.
class NdjsonRow {
 public:
  NdjsonRow& Str(std::string_view key, std::string_view value);
  NdjsonRow& U64(std::string_view key, uint64_t value);
  NdjsonRow& I64(std::string_view key, int64_t value);
  NdjsonRow& Bool(std::string_view key, bool value);
  NdjsonRow& Null(std::string_view key);
  // Any JSON value (arrays, objects: argv, a finding's evidence), on one line.
  NdjsonRow& Value(std::string_view key, const Json& value);

  // The finished line, newline included.
  const std::string& Line();

 private:
  void Key(std::string_view key);
  std::string text_ = "{";
  bool closed_ = false;
};

class NdjsonTable {
 public:
  NdjsonTable() = default;
  NdjsonTable(const NdjsonTable&) = delete;
  NdjsonTable& operator=(const NdjsonTable&) = delete;
  ~NdjsonTable();  // an uncommitted table is removed

  // Starts DIR/NAME.ndjson (written as a hidden temporary until Commit).
  bool Open(const std::string& dir, std::string_view name, std::string* error);
  void Write(NdjsonRow& row);
  // Flushes, closes and renames the table into place.
  bool Commit(std::string* error);

  uint64_t rows() const { return rows_; }
  const std::string& path() const { return path_; }

 private:
  std::FILE* file_ = nullptr;
  std::string path_, tmp_;
  uint64_t rows_ = 0;
  bool write_failed_ = false;
};

}  // namespace colabtrace::analyzer
