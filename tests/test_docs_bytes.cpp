// The byte figures of docs/kv-cache.md are what the library returns: every row of
// its byte-figures table (head dim 128, one layer, one KV head) against
// fa_tq_cache_bytes and fa_tq_cache_bytes_per_token_all_in.
#include "cache_support.hpp"

#include <doctest/doctest.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

namespace {

constexpr int kHeadDim = 128;

struct Row {
    std::string config;  // "K/V" then ":f32", ":c=none|keys|values|both", ":nosm"
    double per_token = 0, all_in = 0;
};

std::vector<Row> byte_figures() {
    std::ifstream in(std::string(TQ_DOCS) + "/kv-cache.md");
    std::string line;
    bool inside = false;
    std::vector<Row> rows;
    while (std::getline(in, line)) {
        if (line.rfind("<!-- byte-figures", 0) == 0) inside = true;
        else if (line.rfind("<!-- end byte-figures", 0) == 0) inside = false;
        else if (inside && line.size() > 2 && line[0] == '|' && std::isdigit(static_cast<unsigned char>(line[2]))) {
            std::vector<std::string> cells;
            std::istringstream fields(line.substr(1));
            for (std::string cell; std::getline(fields, cell, '|');) cells.push_back(cell);
            REQUIRE(cells.size() >= 6);
            rows.push_back({cells[0].substr(1, cells[0].find_last_not_of(' ')), std::stod(cells[4]), std::stod(cells[5])});
        }
    }
    return rows;
}

fa_tq_config parse(const std::string& text) {
    fa_tq_config c{};
    std::istringstream parts(text);
    std::string part;
    std::getline(parts, part, ':');
    c.key_bits = std::stof(part.substr(0, part.find('/')));
    c.value_bits = std::stof(part.substr(part.find('/') + 1));
    while (std::getline(parts, part, ':')) {
        if (part == "f32") c.scale_format = FA_TQ_SCALE_FORMAT_F32;
        else if (part == "nosm") c.smooth = FA_TQ_SMOOTH_NONE;
        else if (part == "c=none") c.center = FA_TQ_CENTER_NONE;
        else if (part == "c=keys") c.center = FA_TQ_CENTER_KEYS;
        else if (part == "c=values") c.center = FA_TQ_CENTER_VALUES;
        else if (part == "c=both") c.center = FA_TQ_CENTER_BOTH;
        else FAIL("docs/kv-cache.md: unknown config part " << part);
    }
    return c;
}

}  // namespace

TEST_CASE("docs: kv-cache.md's byte figures are what fa_tq_cache_bytes and the all-in figure return") {
    const auto rows = byte_figures();
    REQUIRE_MESSAGE(rows.size() >= 3, "docs/kv-cache.md has no byte-figures table");
    for (const Row& row : rows) {
        CAPTURE(row.config);
        const fa_tq_config config = parse(row.config);
        if (!tq::test::has_config(kHeadDim, config.key_bits, config.value_bits)) continue;
        fa_tq_state* state = fa_tq_init(kHeadDim, config, 1);
        REQUIRE(state);
        fa_tq_cache* cache = fa_tq_cache_new(state, 1, 1, 1024);
        REQUIRE(cache);
        size_t per_token = 0;
        REQUIRE(fa_tq_cache_bytes(cache, &per_token, nullptr) == FA_TQ_OK);
        CHECK(double(per_token) == row.per_token);
        CHECK(fa_tq_cache_bytes_per_token_all_in(cache) == row.all_in);
        fa_tq_cache_free(cache);
        fa_tq_free(state);
    }
}
