// A bit rate (in eighths of a bit) as users write it: 4, 3.5, 2.125.
#pragma once

#include <cstdio>
#include <string>

namespace tq::detail {

inline std::string rate_text(int eighths) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", eighths / 8.0);
    return buf;
}

}  // namespace tq::detail
