#include "yaml-fields.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ns3
{
namespace gpusim
{

std::string
NormaliseYamlKey(const std::string& key)
{
    std::string out;
    for (char c : key)
    {
        if (c != '_' && c != '-')
        {
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    return out;
}

std::string
ReadYamlFile(const std::string& file, const std::string& what)
{
    std::ifstream in(file);
    if (!in)
    {
        throw std::runtime_error(file + ": cannot open " + what);
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

YamlFieldReader::YamlFieldReader(std::string source)
    : m_source(std::move(source))
{
}

YAML::Node
YamlFieldReader::Load(const std::string& text) const
{
    try
    {
        return YAML::Load(text);
    }
    catch (const YAML::Exception& e)
    {
        Fail(e.mark, e.msg);
    }
}

void
YamlFieldReader::Fail(const YAML::Mark& m, const std::string& what) const
{
    std::ostringstream os;
    os << m_source;
    if (!m.is_null())
    {
        os << ":" << m.line + 1 << ":" << m.column + 1;
    }
    os << ": " << what;
    throw std::runtime_error(os.str());
}

std::string
YamlFieldReader::Scalar(const YAML::Node& v, const std::string& key) const
{
    if (!v.IsScalar())
    {
        Fail(v.Mark(), "key '" + key + "': expected a scalar value");
    }
    return v.Scalar();
}

uint32_t
YamlFieldReader::Unsigned(const YAML::Node& v, const std::string& key) const
{
    const std::string s = Scalar(v, key);
    errno = 0;
    char* end = nullptr;
    const unsigned long long x = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || s[0] == '-' || *end != '\0' || errno != 0 || x > 0xffffffffULL)
    {
        Fail(v.Mark(), "key '" + key + "': expected a non-negative integer, got '" + s + "'");
    }
    return static_cast<uint32_t>(x);
}

double
YamlFieldReader::Number(const YAML::Node& v, const std::string& key) const
{
    const std::string s = Scalar(v, key);
    char* end = nullptr;
    const double x = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !std::isfinite(x))
    {
        Fail(v.Mark(), "key '" + key + "': expected a number, got '" + s + "'");
    }
    return x;
}

bool
YamlFieldReader::Boolean(const YAML::Node& v, const std::string& key) const
{
    const std::string s = Scalar(v, key);
    if (s == "true" || s == "yes" || s == "on")
    {
        return true;
    }
    if (s == "false" || s == "no" || s == "off")
    {
        return false;
    }
    Fail(v.Mark(), "key '" + key + "': expected true or false, got '" + s + "'");
}

} // namespace gpusim
} // namespace ns3
