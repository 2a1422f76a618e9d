// One byte format on every machine: for fixed inputs, every ISA of this build writes
// the codes and scales an x86-64 build recorded in tests/fixtures/encoded-digests.txt
// (an FNV-1a digest per variant and scale kind), whatever the architecture.  The
// inputs come from integers alone (no libm), so they are the same everywhere.
//
// The fixture covers the variants of the test, eighths and scalar-only presets (every
// CI build's are among them; d 576 is scalar-only's); a variant it lacks is not
// checked, and a build with none of them fails.  To rewrite it, on x86-64:
//   TQ_WRITE_DIGESTS=tests/fixtures/encoded-digests.txt build/<preset>/tests/tq_cross_isa_tests -tc='cross-machine*'
// for build/test, build/eighths and build/scalar-only (rows for the variants it lacks
// are appended).
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {

using Key = std::tuple<int, int, int>;  // head dim, rate in eighths, scale kind

constexpr int kVectors = 64;

// Coordinate i of vector t: a uniform in [-1, 1) on a 2^-23 grid from SplitMix64,
// times 2^(t % 5 - 2): exact in float, the same on every machine.
float input(std::uint64_t t, std::uint64_t i, int d) {
    std::uint64_t z = (t * std::uint64_t(d) + i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float u = float(std::int64_t(z >> 40) - (std::int64_t(1) << 23)) * 0x1p-23f;
    return u * float(1 << (t % 5)) * 0.25f;
}

// FNV-1a, 64 bits, over the codes and the scales' bit patterns of kVectors encodes.
std::uint64_t digest(const tq_bit_kernels& k, int kind) {
    const int d = k.head_dim;
    const auto signs = tq::rotation_signs(d, tq::test::kSeed);
    std::vector<float> x(d);
    std::vector<std::uint8_t> code(k.code_bytes);
    std::uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&](const void* p, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<const std::uint8_t*>(p)[i]) * 0x100000001b3ull;
    };
    for (int t = 0; t < kVectors; ++t) {
        for (int i = 0; i < d; ++i) x[i] = input(t, i, d);
        float scale = 0;
        REQUIRE(k.encode(signs.data(), x.data(), kind, code.data(), &scale) == TQ_OK);
        std::uint32_t bits;
        std::memcpy(&bits, &scale, sizeof bits);
        mix(code.data(), code.size());
        mix(&bits, sizeof bits);
    }
    return h;
}

std::string fixture_path() { return std::string(TQ_FIXTURES) + "/encoded-digests.txt"; }

std::map<Key, std::uint64_t> read_fixture() {
    std::map<Key, std::uint64_t> rows;
    std::ifstream in(fixture_path());
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        int d = 0, eighths = 0, kind = 0;
        std::string hex;
        if (fields >> d >> eighths >> kind >> hex) rows[{d, eighths, kind}] = std::stoull(hex, nullptr, 16);
    }
    return rows;
}

}  // namespace

TEST_CASE("cross-machine: every ISA writes the bytes an x86-64 build recorded") {
    const auto rows = read_fixture();
    if (const char* out = std::getenv("TQ_WRITE_DIGESTS")) {  // append this build's missing rows
        std::ofstream file(out, std::ios::app);
        for (const auto& v : tq::variants())
            for (int kind : {TQ_SCALE_NORM, TQ_SCALE_LEAST_SQUARES})
                if (!rows.count({v.head_dim, v.rate_eighths, kind})) {
                    char hex[17];
                    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(digest(v, kind)));
                    file << v.head_dim << ' ' << v.rate_eighths << ' ' << kind << ' ' << hex << '\n';
                }
        REQUIRE(file.good());
        return;
    }
    REQUIRE_MESSAGE(!rows.empty(), "cannot read " << fixture_path());
    int checked = 0;
    for (const auto& isa : tq::available_isas()) {
        CAPTURE(isa);
        for (const auto& v : tq::variants()) {
            const tq_kernels* k = nullptr;
            REQUIRE(tq_find_isa(isa.c_str(), v.head_dim, tq::rate(v), tq::rate(v), &k) == TQ_OK);
            for (int kind : {TQ_SCALE_NORM, TQ_SCALE_LEAST_SQUARES}) {
                const auto row = rows.find({v.head_dim, v.rate_eighths, kind});
                if (row == rows.end()) continue;
                CAPTURE(v.head_dim);
                CAPTURE(v.rate_eighths);
                CAPTURE(kind);
                CHECK(digest(*k->key, kind) == row->second);
                ++checked;
            }
        }
    }
    MESSAGE(checked << " (ISA, variant, scale kind) digests checked against " << fixture_path());
    CHECK_MESSAGE(checked > 0, "no variant of this build is in the fixture: append its rows on x86-64 (above)");
}
