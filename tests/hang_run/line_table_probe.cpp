// The location-table decoder of `colabtrace run --hang-timeout`'s outside stack reader
// (analyzer/cli/python_remote.h, LineOfInstruction), driven by test_line_table.py, which
// compares it with CPython's own co_lines() for every instruction of many real code objects.
//
// Reads lines "FIRSTLINENO HEX UNITS" (a code object's co_firstlineno, its co_linetable
// in hex, and its number of code units) from stdin; prints for each one line with the
// line of every instruction index from -1 to UNITS-1, blank-separated.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/python_remote.h"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    int firstlineno = 0;
    std::string hex;
    int units = 0;
    if (!(in >> firstlineno >> hex >> units)) {
      std::fprintf(stderr, "bad input line: %s\n", line.c_str());
      return 2;
    }
    if (hex == "-") hex.clear();  // an empty table
    std::vector<uint8_t> table;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
      table.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    }
    std::string out;
    for (int lasti = -1; lasti < units; ++lasti) {
      if (lasti > -1) out += ' ';
      out += std::to_string(colabtrace::cli::LineOfInstruction(table.data(), table.size(), firstlineno, lasti));
    }
    std::cout << out << '\n';
  }
  return 0;
}
