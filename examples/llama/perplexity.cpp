// tq-llama perplexity: next-token log-likelihood of a text in fixed windows, each
// window from an empty cache; with --sweep, FP32 and TurboQuant configs on the same
// windows, compared position by position (KL divergence, top-1 agreement).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "engine.hpp"

namespace llama {
namespace {

// log softmax of one row, in double.
void log_softmax(const float* row, int n, std::vector<double>& out) {
    double top = *std::max_element(row, row + n), sum = 0;
    for (int i = 0; i < n; ++i) sum += std::exp(row[i] - top);
    double log_z = top + std::log(sum);
    out.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) out[i] = row[i] - log_z;
}

struct Tally {
    KvConfig kv;
    double bytes_per_token = 0;  // all in
    double nll = 0, kl = 0, seconds = 0;
    long predictions = 0, agree = 0;
};

}  // namespace

int perplexity(const Options& o) {
    Engine e(o);
    // A model that wants BOS (Gemma) gets it at the start of every window, as llama.cpp's
    // perplexity does: each window is BOS and the next window - 1 tokens of the text.
    bool bos = e.tokenizer.adds_bos();
    auto tokens = e.tokenizer.encode(read_file(o.text), false);
    int stride = o.window - (bos ? 1 : 0);
    int fit = stride > 0 ? static_cast<int>(tokens.size()) / stride : 0;
    int windows = o.windows ? o.windows : fit;
    if (windows < 1 || windows > fit)
        throw std::invalid_argument(o.text + ": " + std::to_string(tokens.size()) + " tokens hold " + std::to_string(fit) +
                                    " windows of " + std::to_string(o.window) + ", not " + std::to_string(windows));
    std::vector<Tally> tallies{{o.sweep.empty() ? o.kv : KvConfig{}}};
    for (const auto& kv : o.sweep) tallies.push_back({kv});
    std::vector<std::unique_ptr<KvCache>> caches;
    for (auto& t : tallies) {
        caches.push_back(make_cache(e.model, t.kv, o.window, o.seed, &e.pool));
        t.bytes_per_token = caches.back()->bytes_per_token_all_in();
    }

    // Logits go chunk by chunk (kChunk positions, every config), so that a large
    // vocabulary (Gemma's 262144) needs kChunk rows of logits per config, not window.
    constexpr int kChunk = 64;
    int vocab = e.model.config().vocab, dim = e.model.config().dim;
    std::vector<std::vector<float>> hidden(tallies.size());
    std::vector<float> logits(static_cast<std::size_t>(kChunk) * vocab);
    // the first config's log-probs and probabilities in this chunk, and its top-1
    std::vector<std::vector<double>> base(kChunk);
    std::vector<std::vector<float>> base_p(kChunk);
    std::vector<std::ptrdiff_t> base_top(kChunk);
    auto top = [](const std::vector<double>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); };
    std::vector<double> lp;
    std::vector<std::int32_t> window(static_cast<std::size_t>(o.window));
    for (int w = 0; w < windows; ++w) {
        if (bos) window[0] = e.tokenizer.bos();
        std::copy_n(tokens.begin() + static_cast<std::ptrdiff_t>(w) * stride, stride, window.begin() + (bos ? 1 : 0));
        for (std::size_t c = 0; c < tallies.size(); ++c) {
            auto start = std::chrono::steady_clock::now();
            caches[c]->clear();
            hidden[c] = e.model.hidden(e.pool, window, 0, *caches[c]);
            tallies[c].seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        }
        for (int t0 = 0; t0 + 1 < o.window; t0 += kChunk) {  // position t predicts token t + 1
            int rows = std::min(kChunk, o.window - 1 - t0);
            for (std::size_t c = 0; c < tallies.size(); ++c) {
                auto start = std::chrono::steady_clock::now();
                e.model.logits(e.pool, &hidden[c][static_cast<std::size_t>(t0) * dim], rows, logits.data());
                tallies[c].seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                Tally& s = tallies[c];
                for (int r = 0; r < rows; ++r) {
                    int t = t0 + r;
                    log_softmax(&logits[static_cast<std::size_t>(r) * vocab], vocab, lp);
                    s.nll -= lp[static_cast<std::size_t>(window[t + 1])];
                    ++s.predictions;
                    if (c == 0) {
                        base[r] = lp;
                        base_p[r].resize(lp.size());
                        for (std::size_t i = 0; i < lp.size(); ++i) base_p[r][i] = static_cast<float>(std::exp(lp[i]));
                        base_top[r] = top(lp);
                        continue;
                    }
                    double kl = 0;
                    for (int i = 0; i < vocab; ++i) kl += base_p[r][i] * (base[r][i] - lp[i]);
                    s.kl += kl;
                    s.agree += base_top[r] == top(lp);
                }
            }
        }
        std::fprintf(stderr, "window %d/%d: perplexity %.4f\n", w + 1, windows,
                     std::exp(tallies[0].nll / static_cast<double>(tallies[0].predictions)));
    }

    std::printf("%d windows of %d tokens (%ld predictions per config) from %s\n\n", windows, o.window, tallies[0].predictions, o.text.c_str());
    std::printf("| KV cache | bytes/token | perplexity | vs FP32 | mean KL | top-1 agreement |\n");
    std::printf("|---|---|---|---|---|---|\n");
    double base_ppl = std::exp(tallies[0].nll / static_cast<double>(tallies[0].predictions));
    for (std::size_t c = 0; c < tallies.size(); ++c) {
        const Tally& s = tallies[c];
        double ppl = std::exp(s.nll / static_cast<double>(s.predictions));
        std::string name = caches[c]->name();
        if (c == 0) {
            std::printf("| %s | %.1f | %.4f | | | |\n", name.c_str(), s.bytes_per_token, ppl);
        } else {
            // The mean KL with at least 4 significant digits (K8/V8's is about 1e-4), and 5 decimals.
            const double kl = s.kl / static_cast<double>(s.predictions);
            const int decimals = kl > 0 ? std::max(5, 3 - static_cast<int>(std::floor(std::log10(kl)))) : 5;
            std::printf("| %s | %.1f | %.4f | %+.2f%% | %.*f | %.2f%% |\n", name.c_str(), s.bytes_per_token, ppl,
                        100 * (ppl / base_ppl - 1), decimals, kl,
                        100.0 * static_cast<double>(s.agree) / static_cast<double>(s.predictions));
        }
    }
    std::printf("\n");
    for (std::size_t c = 0; c < tallies.size(); ++c)
        std::printf("%s: %.1f tokens/s\n", caches[c]->name().c_str(), static_cast<double>(windows) * o.window / tallies[c].seconds);
    return 0;
}

}  // namespace llama
