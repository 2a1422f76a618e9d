#include "kernel_names.hpp"

#include <cstdio>
#include <cstdlib>
#include <regex>

namespace tq::cli {
namespace {

// 28 -> "3.5" (files) or "3_5" (identifiers).
std::string rate_text(int eighths, char point) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", eighths / 8.0);
    std::string s = buf;
    for (char& c : s)
        if (c == '.') c = point;
    return s;
}

bool is_rotation(const std::string& kernel) { return kernel == "rotate" || kernel == "unrotate"; }

}  // namespace

std::string kernel_name(const KernelRef& k) {
    std::string s = "tq_" + k.kernel + "_d" + std::to_string(k.head_dim);
    if (!is_rotation(k.kernel)) s += "_b" + rate_text(k.rate_eighths, '_');
    return s + "__" + k.isa;
}

std::string kernel_file(const KernelRef& k) {
    if (is_rotation(k.kernel)) return k.isa + "/rotate-d" + std::to_string(k.head_dim) + "-" + k.isa + ".cpp";
    const std::string family = k.kernel == "unpack" ? "pack" : k.kernel;
    const std::string isa = family == "pack" ? "scalar" : k.isa;  // the layout alone: one scalar copy
    return isa + "/" + family + "-d" + std::to_string(k.head_dim) + "-b" + rate_text(k.rate_eighths, '.') + "-" +
           isa + ".cpp";
}

std::optional<KernelRef> parse_kernel_name(const std::string& name) {
    static const std::regex re(R"(tq_([a-z]+)_d([0-9]{1,5})(?:_b([0-9])(?:_([0-9]{1,3}))?)?__([a-z0-9]+))");
    std::smatch m;
    if (!std::regex_match(name, m, re)) return std::nullopt;
    KernelRef k{m[1], std::atoi(m[2].str().c_str()), 0, m[5]};
    if (m[3].matched) {
        std::string rate = m[3].str();  // "3_5" is 3.5
        if (m[4].matched) rate.append(1, '.').append(m[4].str());
        k.rate_eighths = static_cast<int>(std::atof(rate.c_str()) * 8 + 0.5);
    }
    if (is_rotation(k.kernel) != !m[3].matched) return std::nullopt;
    return k;
}

}  // namespace tq::cli
