// A temporary directory that the tests remove, with everything in it, when they are done:
// test runs must leave nothing behind in the system's temp dir.
#ifndef GPUSIM_TEST_TEMP_DIR_H
#define GPUSIM_TEST_TEMP_DIR_H

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

class TestTempDir
{
  public:
    /// Creates <temp dir>/<prefix>-XXXXXX (mkdtemp: unique even when suites run in parallel).
    explicit TestTempDir(const std::string& prefix)
    {
        std::string tmpl =
            (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
        if (!::mkdtemp(tmpl.data()))
        {
            throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
        }
        m_path = tmpl;
    }

    ~TestTempDir()
    {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }

    TestTempDir(const TestTempDir&) = delete;
    TestTempDir& operator=(const TestTempDir&) = delete;

    const std::string& Path() const
    {
        return m_path;
    }

    std::string Path(const std::string& name) const
    {
        return m_path + "/" + name;
    }

    /// A path inside the directory not handed out before (a counter prefixes the name), so
    /// tests sharing one directory in a single process never see each other's files.
    std::string Unique(const std::string& name)
    {
        return Path(std::to_string(++m_count) + "-" + name);
    }

    /// A new, empty subdirectory (see Unique).
    std::string NewDir(const std::string& name)
    {
        std::string p = Unique(name);
        std::filesystem::create_directories(p);
        return p;
    }

  private:
    std::string m_path;
    uint64_t m_count = 0;
};

#endif // GPUSIM_TEST_TEMP_DIR_H
