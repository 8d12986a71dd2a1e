// Shared by the search tests (search-test.cc, context-parallel-test.cc).
#ifndef GPUSIM_TEST_SEARCH_TEST_UTIL_H
#define GPUSIM_TEST_SEARCH_TEST_UTIL_H

#include <gtest/gtest.h>

#include <cstddef>
#include <regex>
#include <string>

namespace gpusim_test
{

/// Checks that every simulated plan in a `gpusim search --json` text has its closed-form bound
/// at or below its simulated iteration time; returns how many plans it checked.
inline size_t
ExpectBoundsBelowSimulated(const std::string& json)
{
    const std::regex re("\"bound_us\":([0-9.e+]+),\"iteration_us\":([0-9.e+]+)");
    size_t checked = 0;
    for (std::sregex_iterator it(json.begin(), json.end(), re), end; it != end; ++it)
    {
        EXPECT_LE(std::stod((*it)[1]), std::stod((*it)[2])) << (*it)[0];
        ++checked;
    }
    return checked;
}

} // namespace gpusim_test

#endif // GPUSIM_TEST_SEARCH_TEST_UTIL_H
