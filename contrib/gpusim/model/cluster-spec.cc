#include "ns3/cluster-spec.h"

#include "ns3/gpu-spec.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

namespace ns3
{
namespace gpusim
{

bool
LookupClusterPreset(const std::string& name, ClusterSpec& out)
{
    // NVIDIA DGX datasheets: 8 SXM GPUs on NVSwitch, one ConnectX NIC per GPU (compute
    // fabric), PCIe switch between GPU and NIC. Fabric defaults follow the DGX SuperPOD
    // reference design (rail-optimised, non-blocking).
    if (name == "dgx-h100")
    {
        ClusterSpec s;
        s.preset = name;
        s.gpuModel = "h100-sxm";
        s.gpusPerServer = 8;
        s.nicsPerServer = 8;
        s.nicGbps = 400;    // ConnectX-7
        s.nvlinkGBps = 450; // NVLink4: 900 GB/s bidirectional per GPU
        s.pcieGBps = 64;    // PCIe Gen5 x16
        s.fabric = "rail";
        out = s;
        return true;
    }
    if (name == "dgx-a100")
    {
        ClusterSpec s;
        s.preset = name;
        s.gpuModel = "a100-sxm";
        s.gpusPerServer = 8;
        s.nicsPerServer = 8;
        s.nicGbps = 200;    // ConnectX-6 HDR
        s.nvlinkGBps = 300; // NVLink3: 600 GB/s bidirectional per GPU
        s.pcieGBps = 32;    // PCIe Gen4 x16
        s.fabric = "rail";
        out = s;
        return true;
    }
    return false;
}

std::string
KnownClusterPresets()
{
    return "dgx-h100, dgx-a100";
}

void
ValidateClusterSpec(const ClusterSpec& s)
{
    auto fail = [](const std::string& why) {
        throw std::runtime_error("impossible topology: " + why);
    };
    auto positive = [&](double v, const char* name) {
        if (!(v > 0) || !std::isfinite(v))
        {
            std::ostringstream os;
            os << name << " must be a positive number (got " << v << ")";
            fail(os.str());
        }
    };
    if (s.servers == 0)
    {
        fail("0 servers");
    }
    if (s.gpusPerServer == 0)
    {
        fail("0 GPUs per server");
    }
    if (s.nicsPerServer == 0)
    {
        fail("0 NICs per server (GPUs could not reach other servers)");
    }
    if (s.nicsPerServer > s.gpusPerServer || s.gpusPerServer % s.nicsPerServer != 0)
    {
        fail(std::to_string(s.nicsPerServer) + " NICs cannot be shared evenly by " +
             std::to_string(s.gpusPerServer) + " GPUs per server");
    }
    if (uint64_t(s.servers) * s.gpusPerServer > (1u << 24))
    {
        fail("more than 16M GPUs");
    }
    positive(s.nicGbps, "nicGbps");
    positive(s.nvlinkGBps, "nvlinkGBps");
    positive(s.pcieGBps, "pcieGBps");
    if (!(s.linkLatencyUs >= 0) || !std::isfinite(s.linkLatencyUs) || !(s.nvlinkLatencyUs >= 0) ||
        !std::isfinite(s.nvlinkLatencyUs))
    {
        fail("latencies must be non-negative");
    }
    if (s.fabric != "single-switch" && s.fabric != "leaf-spine" && s.fabric != "fat-tree" &&
        s.fabric != "rail")
    {
        fail("unknown fabric '" + s.fabric + "' (single-switch, leaf-spine, fat-tree, rail)");
    }
    if (!(s.oversubscription >= 1) || !std::isfinite(s.oversubscription))
    {
        fail("oversubscription must be >= 1");
    }
    if (s.nicsPerLeaf == 0)
    {
        fail("nicsPerLeaf must be >= 1");
    }
    GpuSpec g;
    if (!LookupGpuSpec(s.gpuModel, g))
    {
        fail("unknown GPU model '" + s.gpuModel + "' (known: " + KnownGpuModels() + ")");
    }
}

namespace
{

/// "gpus_per_server", "gpusPerServer", "GPUs-per-server" -> "gpusperserver".
std::string
NormaliseKey(const std::string& k)
{
    std::string out;
    for (char c : k)
    {
        if (c != '_' && c != '-')
        {
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    return out;
}

class SpecReader
{
  public:
    explicit SpecReader(std::string source)
        : m_source(std::move(source))
    {
    }

    [[noreturn]] void Fail(const YAML::Mark& m, const std::string& what) const
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

    std::string Scalar(const YAML::Node& v, const std::string& key) const
    {
        if (!v.IsScalar())
        {
            Fail(v.Mark(), "key '" + key + "': expected a scalar value");
        }
        return v.Scalar();
    }

    uint32_t Unsigned(const YAML::Node& v, const std::string& key) const
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

    double Number(const YAML::Node& v, const std::string& key) const
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

    ClusterSpec Read(const YAML::Node& root) const
    {
        if (!root.IsMap())
        {
            Fail(root.Mark(), "expected a mapping of cluster keys (e.g. 'preset: dgx-h100')");
        }
        ClusterSpec spec;
        // The preset goes first wherever it appears, so the other keys override it.
        for (const auto& kv : root)
        {
            const std::string key = Scalar(kv.first, "<key>");
            if (NormaliseKey(key) == "preset")
            {
                const std::string name = Scalar(kv.second, key);
                if (!LookupClusterPreset(name, spec))
                {
                    Fail(kv.second.Mark(),
                         "key 'preset': unknown preset '" + name +
                             "' (known: " + KnownClusterPresets() + ")");
                }
            }
        }
        using Setter = std::function<void(const YAML::Node&, const std::string&)>;
        const std::pair<const char*, Setter> fields[] = {
            {"gpumodel", [&](auto& v, auto& k) { spec.gpuModel = Scalar(v, k); }},
            {"servers", [&](auto& v, auto& k) { spec.servers = Unsigned(v, k); }},
            {"gpusperserver", [&](auto& v, auto& k) { spec.gpusPerServer = Unsigned(v, k); }},
            {"nicsperserver", [&](auto& v, auto& k) { spec.nicsPerServer = Unsigned(v, k); }},
            {"nicgbps", [&](auto& v, auto& k) { spec.nicGbps = Number(v, k); }},
            {"nvlinkgbps", [&](auto& v, auto& k) { spec.nvlinkGBps = Number(v, k); }},
            {"pciegbps", [&](auto& v, auto& k) { spec.pcieGBps = Number(v, k); }},
            {"fabric", [&](auto& v, auto& k) { spec.fabric = Scalar(v, k); }},
            {"oversubscription", [&](auto& v, auto& k) { spec.oversubscription = Number(v, k); }},
            {"nicsperleaf", [&](auto& v, auto& k) { spec.nicsPerLeaf = Unsigned(v, k); }},
            {"linklatencyus", [&](auto& v, auto& k) { spec.linkLatencyUs = Number(v, k); }},
            {"nvlinklatencyus", [&](auto& v, auto& k) { spec.nvlinkLatencyUs = Number(v, k); }},
        };
        for (const auto& kv : root)
        {
            const std::string key = Scalar(kv.first, "<key>");
            const std::string norm = NormaliseKey(key);
            if (norm == "preset")
            {
                continue;
            }
            bool known = false;
            for (const auto& [name, set] : fields)
            {
                if (norm == name)
                {
                    set(kv.second, key);
                    known = true;
                    break;
                }
            }
            if (!known)
            {
                Fail(kv.first.Mark(),
                     "unknown key '" + key +
                         "' (known: preset, gpuModel, servers, gpusPerServer, nicsPerServer, "
                         "nicGbps, nvlinkGBps, pcieGBps, fabric, oversubscription, nicsPerLeaf, "
                         "linkLatencyUs, nvlinkLatencyUs)");
            }
        }
        try
        {
            ValidateClusterSpec(spec);
        }
        catch (const std::runtime_error& e)
        {
            Fail(root.Mark(), e.what());
        }
        return spec;
    }

  private:
    std::string m_source;
};

} // namespace

ClusterSpec
ParseClusterSpecYaml(const std::string& text, const std::string& sourceName)
{
    SpecReader reader(sourceName);
    YAML::Node root;
    try
    {
        root = YAML::Load(text);
    }
    catch (const YAML::Exception& e)
    {
        reader.Fail(e.mark, e.msg);
    }
    return reader.Read(root);
}

ClusterSpec
LoadClusterSpecYaml(const std::string& file)
{
    std::ifstream in(file);
    if (!in)
    {
        throw std::runtime_error(file + ": cannot open cluster spec");
    }
    std::ostringstream text;
    text << in.rdbuf();
    return ParseClusterSpecYaml(text.str(), file);
}

} // namespace gpusim
} // namespace ns3
