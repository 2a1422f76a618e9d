// tq-codebook: prints the Lloyd-Max codebook for one (head_dim, bits).
// A build-time host tool: the generator turns its JSON into constexpr tables.
#include "lloyd_max.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>

namespace {

constexpr const char* kUsage =
    "usage: tq-codebook --head-dim D --bits B [--format json|text] [--output FILE]\n"
    "  D: integer in [8, 1024]; B: integer in [1, 8]; default format json, default output stdout";

[[noreturn]] void fail(const std::string& message) {
    std::cerr << "tq-codebook: " << message << "\n" << kUsage << "\n";
    std::exit(2);
}

int parse_int(const std::string& flag, const char* text) {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < -1000000 || v > 1000000)
        fail(flag + " needs an integer, got '" + text + "'");
    return static_cast<int>(v);
}

// Writes only when the content changes, so build-time dependents stay clean.
void write_if_changed(const std::string& path, const std::string& content) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
        const std::string old((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (old == content) return;
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) fail("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
    std::optional<int> head_dim, bits;
    std::string format = "json", output;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::cout << kUsage << "\n";
            return 0;
        }
        if (i + 1 >= argc) fail("missing value after " + arg);
        const char* value = argv[++i];
        if (arg == "--head-dim") head_dim = parse_int(arg, value);
        else if (arg == "--bits") bits = parse_int(arg, value);
        else if (arg == "--format") format = value;
        else if (arg == "--output") output = value;
        else fail("unknown argument '" + arg + "'");
    }
    if (!head_dim) fail("--head-dim is required");
    if (!bits) fail("--bits is required");
    if (format != "json" && format != "text") fail("--format must be json or text, got '" + format + "'");

    try {
        const auto cb = tq::lloyd_max::solve_lloyd_max(*head_dim, *bits);
        const std::string text = format == "json" ? tq::lloyd_max::to_json(cb) : tq::lloyd_max::to_text(cb);
        if (output.empty()) std::cout << text;
        else write_if_changed(output, text);
    } catch (const std::invalid_argument& e) {
        fail(e.what());
    } catch (const std::exception& e) {
        std::cerr << "tq-codebook: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
