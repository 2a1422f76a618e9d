// libFuzzer: `tq eval`'s .npy reader (tools/npy.hpp) on any bytes.  Contract: an
// array whose data matches its shape, or an NpyError whose message is one
// printable line of bounded length.
#include "fuzz_support.hpp"
#include "npy.hpp"

#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const tq::fuzz::InputFile file(".npy");
    const std::string& path = file.write(data, size);
    try {
        const tq::cli::NpyArray a = tq::cli::read_npy(path);
        std::size_t count = 1;
        for (std::size_t n : a.shape) count *= n;
        if (a.data.size() != count) tq::fuzz::broken("an array of " + std::to_string(a.data.size()) + " values, shape says " + std::to_string(count));
    } catch (const tq::cli::NpyError& e) {
        tq::fuzz::check_message(e.what(), path.size() + 200);
    }
    return 0;
}
