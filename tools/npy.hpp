// Reading NumPy .npy arrays (format versions 1-3): float32 or float16, C order,
// little-endian — what `np.save` writes for activations.  Anything else is a
// one-line error (NpyError), never a crash.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace tq::cli {

struct NpyError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct NpyArray {
    std::vector<std::size_t> shape;
    std::vector<float> data;  // converted to float32
};

NpyArray read_npy(const std::string& path);

}  // namespace tq::cli
