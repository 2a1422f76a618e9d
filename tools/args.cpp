#include "args.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace tq::cli {

Args::Args(const char* command, const char* usage, int argc, char** argv, std::initializer_list<const char*> options,
           std::initializer_list<const char*> flags, int max_positionals)
    : command_(command), usage_(usage) {
    const std::set<std::string> with_value(options.begin(), options.end()), without(flags.begin(), flags.end());
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::fputs(usage, stdout);
            std::exit(0);
        }
        if (arg.rfind("--", 0) != 0) {
            if (int(positionals_.size()) >= max_positionals) fail("unexpected argument '" + arg + "'");
            positionals_.push_back(arg);
        } else if (without.count(arg)) {
            flags_.insert(arg);
        } else if (with_value.count(arg)) {
            if (i + 1 >= argc) fail("missing value after " + arg);
            values_[arg] = argv[++i];
        } else {
            fail("unknown option '" + arg + "'");
        }
    }
}

void Args::fail(const std::string& message) const {
    std::fprintf(stderr, "tq %s: %s\n%s", command_.c_str(), message.c_str(), usage_.c_str());
    std::exit(2);
}

std::string Args::value(const std::string& name, const std::string& fallback) const {
    const auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
}

int Args::integer(const std::string& name, int fallback, int min, int max) const {
    if (!has(name)) return fallback;
    const std::string text = value(name);
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || errno || v < min || v > max)
        fail(name + " needs an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got '" + text +
             "'");
    return static_cast<int>(v);
}

double Args::number(const std::string& name, double fallback) const {
    if (!has(name)) return fallback;
    const std::string text = value(name);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0') fail(name + " needs a number, got '" + text + "'");
    return v;
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

}  // namespace tq::cli
