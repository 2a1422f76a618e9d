// Command-line parsing shared by the `tq` subcommands: --help, options with a
// value, flags, positionals; a bad argument is one line on stderr and exit 2.
#pragma once

#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tq::cli {

class Args {
public:
    // `options` take a value (--head-dim 128), `flags` do not (--json).
    Args(const char* command, const char* usage, int argc, char** argv, std::initializer_list<const char*> options,
         std::initializer_list<const char*> flags = {}, int max_positionals = 0);

    bool flag(const std::string& name) const { return flags_.count(name) > 0; }
    bool has(const std::string& name) const { return values_.count(name) > 0; }
    std::string value(const std::string& name, const std::string& fallback = "") const;
    int integer(const std::string& name, int fallback, int min, int max) const;
    double number(const std::string& name, double fallback) const;
    const std::vector<std::string>& positionals() const { return positionals_; }
    [[noreturn]] void fail(const std::string& message) const;

private:
    std::string command_, usage_;
    std::map<std::string, std::string> values_;
    std::set<std::string> flags_;
    std::vector<std::string> positionals_;
};

// JSON string literal of s.
std::string json_string(const std::string& s);

}  // namespace tq::cli
