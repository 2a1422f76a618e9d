// A cache's contents as bytes and back (fa_tq_cache_serialize / _deserialize): the
// held positions' codes and scales, the levers' statistics, block records and sinks.
// Native byte order and this library's layout: a machine-local state, like an
// engine's session file.  Reading is all or nothing: every field is checked against
// the cache it goes into before anything of that cache changes.
#include "fa_tq_blocks.hpp"
#include "fa_tq_checks.hpp"
#include "fa_tq_internal.hpp"
#include "last_error.hpp"
#include "norms.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace tq::detail {
namespace {

constexpr std::uint32_t kMagic = 0x31435154;  // "TQC1"
constexpr std::uint32_t kVersion = 2;  // 2: each stream's floor (fa_tq_cache_truncate); 1 still read
// Evicted positions a state may record: beyond any stream's life, with absolute positions
// and their blocks far from overflowing a long.
constexpr long kMaxEvicted = 1L << 62;

// Writes into out (or only counts, when out is null).
class Writer {
public:
    explicit Writer(std::uint8_t* out) : out_(out) {}
    template <typename T> void put(const T& v) { bytes(&v, sizeof v); }
    template <typename T> void put_vector(const std::vector<T>& v) {
        put(std::uint64_t(v.size()));
        bytes(v.data(), v.size() * sizeof(T));
    }
    void bytes(const void* p, std::size_t n) {
        if (out_ != nullptr && n > 0) std::memcpy(out_ + size_, p, n);
        size_ += n;
    }
    std::size_t size() const { return size_; }

private:
    std::uint8_t* out_;
    std::size_t size_ = 0;
};

class Reader {
public:
    Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    template <typename T> T get() {
        T v{};
        bytes(&v, sizeof v);
        return v;
    }
    // A vector whose size must equal `want` (the cache's own).
    template <typename T> void get_vector(std::vector<T>& v, std::size_t want, const char* what) {
        if (get<std::uint64_t>() != want) throw Bad{std::string(what) + " has another size than this cache's"};
        v.resize(want);
        bytes(v.data(), want * sizeof(T));
    }
    void bytes(void* p, std::size_t n) {
        if (n > size_ - at_) throw Bad{"truncated"};
        if (n > 0) std::memcpy(p, data_ + at_, n);
        at_ += n;
    }
    bool done() const { return at_ == size_; }
    struct Bad {
        std::string why;
    };

private:
    const std::uint8_t* data_;
    std::size_t size_, at_ = 0;
};

// What a layer was made for (fa_tq_init's head dim, rates, scale, seed and levers):
// a buffer from another quantizer has the same sizes but means other codes.
struct Quantizer {
    std::int32_t head_dim, key_eighths, value_eighths, scale_kind;
    std::uint64_t seed;
    std::int32_t f16_scales, center_keys, center_values, smooth_keys, center_block, sinks;
    bool operator==(const Quantizer&) const = default;
};
Quantizer quantizer(const fa_tq_layer& lay) {
    const fa_tq_levers& lv = lay.levers;
    return {lay.head_dim, lay.key_eighths, lay.value_eighths, lay.scale_kind, lay.seed, lv.f16_scales,
            lv.center_keys, lv.center_values, lv.smooth_keys, lv.center_block, lv.sinks};
}

// Slots that hold positions: the first min(length, max_seq_len) of each head's stream.
std::size_t held_slots(const fa_tq_cache* c, const fa_tq_stream& s) {
    return std::size_t(std::min(s.length, c->max_seq_len));
}

// Each head's held slots: codes, then scales.  Stream is const for writing.
template <typename IO, typename Stream> void slots(IO& io, const fa_tq_cache* c, const fa_tq_layer& lay, Stream& s) {
    const std::size_t n = held_slots(c, s);
    for (int h = 0; h < c->num_heads; ++h) {
        const std::size_t base = c->stream_index(h);
        io.bytes(s.codes.data() + base * s.code_bytes, n * s.code_bytes);
        if (lay.levers.f16_scales) io.bytes(s.scales16.data() + base, n * 2);
        else io.bytes(s.scales32.data() + base, n * 4);
    }
}

void write_stream(Writer& w, const fa_tq_cache* c, const fa_tq_layer& lay, const fa_tq_stream& s) {
    w.put(std::int32_t(s.length));
    w.put(std::int32_t(s.floor));
    w.put(std::int64_t(s.count));
    w.put(std::int64_t(s.first_block));
    w.put(std::int64_t(s.blocks));
    w.put_vector(s.sum);
    w.put_vector(s.sum_sq);
    w.put_vector(s.means);
    w.put_vector(s.smooth);
    w.put_vector(s.sink_vectors);
    w.put(s.scale_bound);
    w.put(s.extra_bound);
    w.put(s.smooth_bound);
    slots(w, c, lay, s);
}

// `reserved`: the same stream in the cache, whose block records have their capacity
// reserved at creation; a buffer that needs more is not from a cache of this shape.
// Running sums of n float vectors: finite, within n times float's reach (so the
// statistics read off them stay finite in double), squares not negative, and none
// before the first vector.
void check_sums(const std::vector<double>& sum, const std::vector<double>& sum_sq, long n) {
    constexpr double kReach = std::numeric_limits<float>::max();
    for (std::size_t i = 0; i < sum_sq.size(); ++i) {
        const double x = i < sum.size() ? sum[i] : 0.0, y = sum_sq[i];
        if (!(std::abs(x) <= double(n) * kReach && y >= 0 && y <= double(n) * kReach * kReach))
            throw Reader::Bad{"a running sum is out of range for its count"};
    }
}

// The newest absolute position a stream has written (evicted - 1: none), with the
// evicted count being read.
long newest(const fa_tq_stream& s, long evicted) { return s.length - 1 + evicted; }

// The block records cover blocks first_block .. first_block + blocks - 1, none past the
// block of the newest position written, or of one that a truncate removed (every
// block is opened by a write, and a truncate keeps the records): within one capacity.
void check_blocks(const fa_tq_cache* c, const fa_tq_layer& lay, const fa_tq_stream& s, long evicted) {
    const long a = newest(s, evicted) + c->max_seq_len;
    const long end = a >= lay.levers.sinks ? block_of(lay.levers, a) + 1 : 1;  // one past the last block there can be
    if (s.blocks > end || s.first_block > end - s.blocks)
        throw Reader::Bad{"a stream's block records lie past its newest position"};
}

// What a stream holds lies within the bounds it carries (attention's range check
// trusts them): scales, the norms of block means and sinks, the smoothing scales.
void check_bounds(const fa_tq_cache* c, const fa_tq_layer& lay, const fa_tq_stream& s, long evicted) {
    const int d = lay.head_dim;
    auto bad = [](const char* what) { return Reader::Bad{std::string("a stream holds ") + what + " beyond its recorded bound"}; };
    for (int h = 0; h < c->num_heads; ++h)
        for (std::size_t i = 0, base = c->stream_index(h); i < held_slots(c, s); ++i) {
            const double x = lay.levers.f16_scales ? double(half_to_float(s.scales16[base + i])) : s.scales32[base + i];
            if (!(std::abs(x) <= s.scale_bound)) throw bad("a scale");
        }
    for (std::size_t i = 0; i < s.means.size(); i += std::size_t(d))
        if (!(half_norm(&s.means[i], d) <= s.extra_bound)) throw bad("a block mean");
    // The sinks written since the last clear (earlier builds left older ones behind a clear).
    const long written = std::min<long>(lay.levers.sinks, newest(s, evicted) + 1);
    for (int h = 0; h < c->num_heads; ++h)
        for (long a = 0; a < written; ++a)
            if (!(norm(&s.sink_vectors[(std::size_t(h) * lay.levers.sinks + std::size_t(a)) * d], d) <= s.extra_bound))
                throw bad("a sink");
    for (std::uint16_t x : s.smooth)
        if (!(half_to_float(x) > 0 && half_to_float(x) <= s.smooth_bound)) throw bad("a smoothing scale");
}

void read_stream(Reader& r, std::uint32_t version, const fa_tq_cache* c, long evicted, const fa_tq_layer& lay,
                 fa_tq_stream& s, const fa_tq_stream& reserved) {
    s.length = r.get<std::int32_t>();
    s.floor = version >= 2 ? r.get<std::int32_t>() : 0;
    if (s.floor < 0 || s.floor > s.length || (!c->ring && s.floor != 0))
        throw Reader::Bad{"a stream's floor is out of range"};
    s.count = long(r.get<std::int64_t>());
    s.first_block = long(r.get<std::int64_t>());
    s.blocks = long(r.get<std::int64_t>());
    if (s.length < 0 || (!c->ring && s.length > c->max_seq_len) || s.count < 0 || s.blocks < 0 || s.first_block < 0)
        throw Reader::Bad{"a stream's length or block counts are out of range"};
    r.get_vector(s.sum, s.sum.size(), "a running sum");
    r.get_vector(s.sum_sq, s.sum_sq.size(), "a running sum of squares");
    // Block records grow with the positions: any size that is whole blocks of heads x d.
    const std::size_t block = std::size_t(c->num_heads) * std::size_t(lay.head_dim);
    for (auto* v : {&s.means, &s.smooth}) {
        const auto n = std::size_t(r.get<std::uint64_t>());
        const bool used = v == &s.means ? s.centered : s.smoothed;
        const std::size_t capacity = v == &s.means ? reserved.means.capacity() : reserved.smooth.capacity();
        if (n % block != 0 || n / block != (used ? std::size_t(s.blocks) : 0) || n > capacity)
            throw Reader::Bad{"a stream's block records do not match its block count"};
        v->resize(n);
        r.bytes(v->data(), n * sizeof(std::uint16_t));
    }
    r.get_vector(s.sink_vectors, s.sink_vectors.size(), "the sinks");
    s.scale_bound = r.get<double>();
    s.extra_bound = r.get<double>();
    s.smooth_bound = r.get<double>();
    // attention's range check trusts these: finite, and no smaller than a fresh cache's
    if (!(std::isfinite(s.scale_bound) && std::isfinite(s.extra_bound) && std::isfinite(s.smooth_bound) &&
          s.scale_bound >= 0 && s.extra_bound >= 0 && s.smooth_bound >= 1))
        throw Reader::Bad{"a stream's bounds are not finite"};
    slots(r, c, lay, s);
    check_blocks(c, lay, s, evicted);
    check_sums(s.sum, s.sum_sq, s.count);
    check_bounds(c, lay, s, evicted);
}

}  // namespace
}  // namespace tq::detail

using namespace tq::detail;

int fa_tq_cache_serialize(const fa_tq_cache* cache, void* out, size_t capacity, size_t* size) {
    constexpr const char* fn = "fa_tq_cache_serialize";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_not_null(fn, cache, "cache")) return rc;
        if (int rc = check_not_null(fn, size, "size")) return rc;
        auto write = [&](Writer& w) {
            w.put(kMagic);
            w.put(kVersion);
            w.put(std::int32_t(cache->num_layers));
            w.put(std::int32_t(cache->num_heads));
            w.put(std::int32_t(cache->max_seq_len));
            w.put(std::int32_t(cache->ring));
            w.put(std::int64_t(cache->evicted));
            for (const fa_tq_layer& lay : cache->layers) {
                w.put(quantizer(lay));
                w.put(std::int64_t(lay.query_count));
                w.put_vector(lay.query_sum_sq);
                write_stream(w, cache, lay, lay.keys);
                write_stream(w, cache, lay, lay.values);
            }
        };
        Writer count(nullptr);
        write(count);
        *size = count.size();
        if (out == nullptr) return FA_TQ_OK;
        if (capacity < count.size())
            return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": the buffer holds " + std::to_string(capacity) +
                                                       " bytes, the cache needs " + std::to_string(count.size()));
        Writer w(static_cast<std::uint8_t*>(out));
        write(w);
        return FA_TQ_OK;
    });
}

int fa_tq_cache_deserialize(fa_tq_cache* cache, const void* data, size_t size) {
    constexpr const char* fn = "fa_tq_cache_deserialize";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_not_null(fn, cache, "cache")) return rc;
        if (int rc = check_not_null(fn, data, "data")) return rc;
        Reader r(static_cast<const std::uint8_t*>(data), size);
        std::vector<fa_tq_layer> layers = cache->layers;  // filled, then swapped in: all or nothing
        long evicted = 0;
        try {
            const std::uint32_t magic = r.get<std::uint32_t>(), version = r.get<std::uint32_t>();
            if (magic != kMagic || version < 1 || version > kVersion)
                throw Reader::Bad{"not a serialized cache of this version"};
            const std::int32_t layers_in = r.get<std::int32_t>(), heads_in = r.get<std::int32_t>(),
                               capacity_in = r.get<std::int32_t>(), ring_in = r.get<std::int32_t>();
            // A linear cache takes another capacity's bytes whose positions fit its own
            // (checked per stream); a ring's slots depend on its size.
            if (layers_in != cache->num_layers || heads_in != cache->num_heads || ring_in != int(cache->ring) ||
                (cache->ring ? capacity_in != cache->max_seq_len : capacity_in <= 0))
                throw Reader::Bad{"the cache has another shape (layers, heads, max_seq_len or ring)"};
            evicted = long(r.get<std::int64_t>());
            if (evicted < 0 || evicted > kMaxEvicted || (cache->ring && evicted != 0))
                throw Reader::Bad{"the evicted count is out of range"};
            for (std::size_t l = 0; l < layers.size(); ++l) {
                fa_tq_layer& lay = layers[l];
                if (r.get<Quantizer>() != quantizer(lay)) throw Reader::Bad{"a layer has another quantizer"};
                lay.query_count = long(r.get<std::int64_t>());
                r.get_vector(lay.query_sum_sq, lay.query_sum_sq.size(), "the query statistics");
                if (lay.query_count < 0) throw Reader::Bad{"the query count is negative"};
                check_sums({}, lay.query_sum_sq, lay.query_count);
                read_stream(r, version, cache, evicted, lay, lay.keys, cache->layers[l].keys);
                read_stream(r, version, cache, evicted, lay, lay.values, cache->layers[l].values);
            }
            if (!r.done()) throw Reader::Bad{"bytes left over after the cache"};
        } catch (const Reader::Bad& bad) {
            return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + bad.why + " (" + std::to_string(size) +
                                                       " bytes); the cache is unchanged");
        }
        cache->layers = layers;  // into the cache's own storage: sizes within what it reserved
        cache->evicted = evicted;
        return FA_TQ_OK;
    });
}
