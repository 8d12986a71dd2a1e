// A small reader for the shim's own trace output, enough for tests: each line is a flat JSON
// object except the nested "gemm" object and [x,y,z] arrays, so fields are found by key.
#ifndef GPUSIM_SHIM_TEST_TRACE_READER_H
#define GPUSIM_SHIM_TEST_TRACE_READER_H

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace shimtest {

struct Op {
  std::string line;

  // Raw text of the value of "key" (string values without quotes), or "" when absent.
  std::string Get(const std::string& key, size_t from = 0) const {
    std::string pat = "\"" + key + "\":";
    size_t p = line.find(pat, from);
    if (p == std::string::npos) return "";
    p += pat.size();
    if (line[p] == '"') {
      size_t e = line.find('"', p + 1);
      return line.substr(p + 1, e - p - 1);
    }
    size_t e = line.find_first_of(",}]", p);
    if (line[p] == '[' || line[p] == '{') e = line.find_first_of("]}", p) + 1;
    return line.substr(p, e - p);
  }
  bool Has(const std::string& key) const { return line.find("\"" + key + "\":") != std::string::npos; }
  long long Int(const std::string& key) const {
    std::string v = Get(key);
    return v.empty() ? -1 : std::stoll(v);
  }
  // A field of the nested "gemm" object.
  long long Gemm(const std::string& key) const {
    size_t g = line.find("\"gemm\":{");
    if (g == std::string::npos) return -1;
    std::string v = Get(key, g);
    return v.empty() ? -1 : std::stoll(v);
  }
  std::string op() const { return Get("op"); }
};

inline std::vector<Op> ReadRank(const std::string& path) {
  std::vector<Op> ops;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) ops.push_back(Op{line});
  return ops;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<Op> Select(const std::vector<Op>& ops, const std::string& op, const std::string& key = "",
                              const std::string& value = "") {
  std::vector<Op> out;
  for (const Op& o : ops)
    if (o.op() == op && (key.empty() || o.Get(key) == value)) out.push_back(o);
  return out;
}

}  // namespace shimtest

#endif
