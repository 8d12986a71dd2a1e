/*
 * JsonWriter: a small streaming JSON writer for gpusim outputs (metrics, traces, Op IR).
 * Numbers are printed with a fixed, locale-independent format so outputs are byte-stable.
 */
#ifndef GPUSIM_JSON_WRITER_H
#define GPUSIM_JSON_WRITER_H

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

class JsonWriter
{
  public:
    JsonWriter& BeginObject();
    JsonWriter& EndObject();
    JsonWriter& BeginArray();
    JsonWriter& EndArray();
    JsonWriter& Key(const std::string& k);
    JsonWriter& String(const std::string& s);
    JsonWriter& Int(int64_t v);
    JsonWriter& Uint(uint64_t v);
    /// Shortest round-trip representation ("%.17g" trimmed); NaN/inf written as null.
    JsonWriter& Double(double v);
    /// Fixed number of decimals (for human-facing figures).
    JsonWriter& Fixed(double v, int decimals);
    JsonWriter& Bool(bool v);
    JsonWriter& Null();
    /// Inserts raw, already valid JSON as a value.
    JsonWriter& Raw(const std::string& json);

    const std::string& Str() const { return m_out; }
    std::string Take() { return std::move(m_out); }

    static std::string Escape(const std::string& s);

  private:
    void BeforeValue();
    std::string m_out;
    std::vector<bool> m_first; //!< per open container: no element written yet
    bool m_afterKey = false;
};

/// Writes content to path atomically (temp file + rename); throws std::runtime_error. In a
/// distributed run (distributed-run.h) only process 0 writes.
void WriteFileAtomically(const std::string& path, const std::string& content);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_JSON_WRITER_H
