// The kernel registry for C++: the same tables as registry.h, with exceptions.
#pragma once

#include "turboquant/registry.h"

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace tq {

// Thrown by the C++ API; code() is the tq_status the C API would return.
class Error : public std::runtime_error {
public:
    Error(tq_status code, const std::string& message) : std::runtime_error(message), code_(code) {}
    tq_status code() const noexcept { return code_; }

private:
    tq_status code_;
};

// The kernel table for (head_dim, key_bits, value_bits), bits whole or in
// steps of 1/8 (3.5); throws tq::Error (TQ_ERROR_UNSUPPORTED, listing what this
// build has) if it was not compiled.
const tq_kernels& find(int head_dim, float key_bits, float value_bits);

// A variant's bits per coordinate: rate_eighths / 8 (3.5 for 28).
inline float rate(const tq_bit_kernels& v) { return static_cast<float>(v.rate_eighths) / 8; }

// Every compiled (head_dim, bit rate) variant for the active ISA.
std::span<const tq_bit_kernels> variants();

// The ISAs in this build that this CPU runs, best first.
std::vector<std::string> available_isas();

// tq_rotation_signs as a vector; throws tq::Error for an unsupported head_dim.
std::vector<float> rotation_signs(int head_dim, std::uint64_t seed);

}  // namespace tq
