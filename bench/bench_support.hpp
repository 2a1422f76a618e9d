// What the benchmark programs share: a cheap deterministic fill, an executor that
// runs tasks in order, a reporter that keeps every run's time for the summary, and
// the CPU's name.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace tq::bench {

// Cheap deterministic fill (xorshift), uniform in [-1, 1).
inline void fill(std::vector<float>& v, std::uint64_t seed) {
    std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (auto& x : v) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x = float(s >> 40) / float(1 << 23) - 1.0f;
    }
}

// An executor (fa_tq_parallel_for) that runs every task in order on the calling
// thread: the flash-decoding split that threads get, with none of the threads' gain,
// so its cost alone.
inline void in_order(void*, int n, void (*task)(void*, int), void* arg) {
    for (int i = 0; i < n; ++i) task(arg, i);
}

// Keeps every run's time (ns per iteration) for the summary.
class Collector : public benchmark::ConsoleReporter {
public:
    std::map<std::string, double> ns;
    void ReportRuns(const std::vector<Run>& runs) override {
        for (const Run& r : runs)
            ns[r.benchmark_name()] = r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit) * 1e9;
        ConsoleReporter::ReportRuns(runs);
    }
};

inline std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown CPU";
}

}  // namespace tq::bench
