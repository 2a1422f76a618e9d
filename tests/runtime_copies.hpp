// The ISAs whose copies of the runtime's per-ISA loops (softmax.cpp, attend_ops.cpp)
// this CPU runs: "scalar" (the runtime's own build) and each target ISA it has.
#pragma once

#include "isas.hpp"

#include <vector>

namespace tq::test {

inline std::vector<const char*> runnable_copies() {
    std::vector<const char*> isas{"scalar"};
#define TQ_RUNNABLE(NAME, TARGET) \
    if (tq::isa_cpu::NAME()) isas.push_back(#NAME);
    TQ_FOR_EACH_TARGET_ISA(TQ_RUNNABLE)
#undef TQ_RUNNABLE
    return isas;
}

}  // namespace tq::test
