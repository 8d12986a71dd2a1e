#include "ns3/json-writer.h"

#include "ns3/distributed-run.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace ns3
{
namespace gpusim
{

void
JsonWriter::BeforeValue()
{
    if (m_afterKey)
    {
        m_afterKey = false;
        return;
    }
    if (!m_first.empty())
    {
        if (!m_first.back())
        {
            m_out += ',';
        }
        m_first.back() = false;
    }
}

JsonWriter&
JsonWriter::BeginObject()
{
    BeforeValue();
    m_out += '{';
    m_first.push_back(true);
    return *this;
}

JsonWriter&
JsonWriter::EndObject()
{
    m_out += '}';
    m_first.pop_back();
    return *this;
}

JsonWriter&
JsonWriter::BeginArray()
{
    BeforeValue();
    m_out += '[';
    m_first.push_back(true);
    return *this;
}

JsonWriter&
JsonWriter::EndArray()
{
    m_out += ']';
    m_first.pop_back();
    return *this;
}

JsonWriter&
JsonWriter::Key(const std::string& k)
{
    BeforeValue();
    m_out += '"';
    m_out += Escape(k);
    m_out += "\":";
    m_afterKey = true;
    return *this;
}

JsonWriter&
JsonWriter::String(const std::string& s)
{
    BeforeValue();
    m_out += '"';
    m_out += Escape(s);
    m_out += '"';
    return *this;
}

JsonWriter&
JsonWriter::Int(int64_t v)
{
    BeforeValue();
    m_out += std::to_string(v);
    return *this;
}

JsonWriter&
JsonWriter::Uint(uint64_t v)
{
    BeforeValue();
    m_out += std::to_string(v);
    return *this;
}

JsonWriter&
JsonWriter::Double(double v)
{
    BeforeValue();
    if (!std::isfinite(v))
    {
        m_out += "null";
        return *this;
    }
    char buf[40];
    // Shortest of %.15g / %.17g that round-trips keeps outputs readable and exact.
    std::snprintf(buf, sizeof(buf), "%.15g", v);
    if (std::strtod(buf, nullptr) != v)
    {
        std::snprintf(buf, sizeof(buf), "%.17g", v);
    }
    m_out += buf;
    return *this;
}

JsonWriter&
JsonWriter::Fixed(double v, int decimals)
{
    BeforeValue();
    if (!std::isfinite(v))
    {
        m_out += "null";
        return *this;
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
    m_out += buf;
    return *this;
}

JsonWriter&
JsonWriter::Bool(bool v)
{
    BeforeValue();
    m_out += v ? "true" : "false";
    return *this;
}

JsonWriter&
JsonWriter::Null()
{
    BeforeValue();
    m_out += "null";
    return *this;
}

JsonWriter&
JsonWriter::Raw(const std::string& json)
{
    BeforeValue();
    m_out += json;
    return *this;
}

std::string
JsonWriter::Escape(const std::string& s)
{
    std::string r;
    r.reserve(s.size());
    for (unsigned char c : s)
    {
        switch (c)
        {
        case '"':
            r += "\\\"";
            break;
        case '\\':
            r += "\\\\";
            break;
        case '\n':
            r += "\\n";
            break;
        case '\r':
            r += "\\r";
            break;
        case '\t':
            r += "\\t";
            break;
        default:
            if (c < 0x20)
            {
                char buf[8];
                std::snprintf(buf, sizeof(buf), "\\u%04x", c);
                r += buf;
            }
            else
            {
                r += static_cast<char>(c);
            }
        }
    }
    return r;
}

void
WriteFileAtomically(const std::string& path, const std::string& content)
{
    if (DistributedRank() != 0)
    {
        return; // distributed runs: every process has the same results; process 0 writes
    }
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out)
        {
            throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
        }
        out << content;
        out.close();
        if (!out)
        {
            std::remove(tmp.c_str());
            throw std::runtime_error("cannot write " + path);
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
    {
        std::remove(tmp.c_str());
        throw std::runtime_error("cannot rename into " + path + ": " + std::strerror(errno));
    }
}

} // namespace gpusim
} // namespace ns3
