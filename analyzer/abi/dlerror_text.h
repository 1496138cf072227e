// What a dlerror() text says, for the forms glibc's loader writes.
//
//   "F: cannot open shared object file: No such file or directory"     kNotFound
//   "P: version `V' not found (required by R)"                        kVersionNotFound
//   "R: undefined symbol: S, version V"                               kUndefinedSymbol
//   "R: undefined symbol: S"                                          kUndefinedSymbol
//   "symbol S version V not defined in file P with link time reference" kSymbolVersion
//   "F: wrong ELF class: ELFCLASS32", anything else                   kOther
#pragma once

#include <string>
#include <string_view>

namespace colabtrace::analyzer::abi {

struct DlerrorFacts {
  enum Kind { kOther, kNotFound, kVersionNotFound, kUndefinedSymbol, kSymbolVersion };
  Kind kind = kOther;
  std::string object;     // the file the message starts with (F, P or R above)
  std::string version;    // V
  std::string symbol;     // S
  std::string required_by;  // R of "required by R"
};

DlerrorFacts ParseDlerror(std::string_view text);

}  // namespace colabtrace::analyzer::abi
