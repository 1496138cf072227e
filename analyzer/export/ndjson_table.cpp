#include "export/ndjson_table.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace colabtrace::analyzer {

void NdjsonRow::Key(std::string_view key) {
  if (text_.size() > 1) text_ += ',';
  text_ += '"';
  text_.append(key);
  text_ += "\":";
}

NdjsonRow& NdjsonRow::Str(std::string_view key, std::string_view value) {
  Key(key);
  AppendJsonString(text_, value);
  return *this;
}

NdjsonRow& NdjsonRow::U64(std::string_view key, uint64_t value) {
  Key(key);
  text_ += std::to_string(value);
  return *this;
}

NdjsonRow& NdjsonRow::I64(std::string_view key, int64_t value) {
  Key(key);
  text_ += std::to_string(value);
  return *this;
}

NdjsonRow& NdjsonRow::Bool(std::string_view key, bool value) {
  Key(key);
  text_ += value ? "true" : "false";
  return *this;
}

NdjsonRow& NdjsonRow::Null(std::string_view key) {
  Key(key);
  text_ += "null";
  return *this;
}

NdjsonRow& NdjsonRow::Value(std::string_view key, const Json& value) {
  Key(key);
  text_ += value.Dump(-1);
  return *this;
}

const std::string& NdjsonRow::Line() {
  if (!closed_) {
    text_ += "}\n";
    closed_ = true;
  }
  return text_;
}

NdjsonTable::~NdjsonTable() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(tmp_.c_str());
  }
}

bool NdjsonTable::Open(const std::string& dir, std::string_view name, std::string* error) {
  path_ = dir + "/" + std::string(name) + ".ndjson";
  tmp_ = dir + "/." + std::string(name) + ".ndjson.tmp." + std::to_string(getpid());
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (file_ == nullptr) {
    if (error) *error = "cannot write " + path_ + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

void NdjsonTable::Write(NdjsonRow& row) {
  const std::string& line = row.Line();
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size()) write_failed_ = true;
  ++rows_;
}

bool NdjsonTable::Commit(std::string* error) {
  bool ok = !write_failed_;
  ok = std::fclose(file_) == 0 && ok;
  file_ = nullptr;
  if (ok && std::rename(tmp_.c_str(), path_.c_str()) == 0) return true;
  if (error) *error = "cannot write " + path_ + ": " + std::strerror(errno);
  std::remove(tmp_.c_str());
  return false;
}

}  // namespace colabtrace::analyzer
