/*
 * Reading typed fields of the project's YAML files (cluster specs, model descriptions) with
 * errors that name the file, line, column and key.
 */
#ifndef GPUSIM_YAML_FIELDS_H
#define GPUSIM_YAML_FIELDS_H

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

namespace ns3
{
namespace gpusim
{

/// "gpus_per_server", "gpusPerServer", "GPUs-per-server" -> "gpusperserver".
std::string NormaliseYamlKey(const std::string& key);

/// The whole text of FILE; throws "FILE: cannot open WHAT" when it cannot be read.
std::string ReadYamlFile(const std::string& file, const std::string& what);

/// Typed scalar fields of one YAML source; every failure throws std::runtime_error
/// "SOURCE:LINE:COLUMN: key 'KEY': what was wrong".
class YamlFieldReader
{
  public:
    explicit YamlFieldReader(std::string source);

    /// Parses a YAML document; syntax errors are reported through Fail() with their position.
    YAML::Node Load(const std::string& text) const;
    [[noreturn]] void Fail(const YAML::Mark& m, const std::string& what) const;
    std::string Scalar(const YAML::Node& v, const std::string& key) const;
    /// A non-negative integer that fits in 32 bits.
    uint32_t Unsigned(const YAML::Node& v, const std::string& key) const;
    /// A finite number.
    double Number(const YAML::Node& v, const std::string& key) const;
    /// true/yes/on or false/no/off.
    bool Boolean(const YAML::Node& v, const std::string& key) const;
    /// The file name (or other source name) errors start with.
    const std::string& Source() const
    {
        return m_source;
    }

  private:
    std::string m_source;
};

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_YAML_FIELDS_H
