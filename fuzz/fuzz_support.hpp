// What the fuzz harnesses share: a byte reader for structured inputs, the file
// the readers under test take, and the one-line-message check.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unistd.h>

namespace tq::fuzz {

// Reads the input front to back; past the end every byte is 0.
class Bytes {
public:
    Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    bool empty() const { return at_ >= size_; }
    std::uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
    // lo + a byte modulo the range's size (ranges up to 256 wide).
    int in(int lo, int hi) { return lo + byte() % (hi - lo + 1); }
    std::uint32_t u32() {
        std::uint32_t v = 0;
        for (int i = 0; i < 4; ++i) v |= std::uint32_t(byte()) << (8 * i);
        return v;
    }

private:
    const std::uint8_t* data_;
    std::size_t size_, at_ = 0;
};

// Stops the run (libFuzzer saves the input) when the code under test breaks its contract.
[[noreturn]] inline void broken(const std::string& what) {
    std::fprintf(stderr, "contract broken: %s\n", what.c_str());
    std::abort();
}

// The input as a file of this process's own (the readers take a path), removed at exit.
class InputFile {
public:
    explicit InputFile(const char* suffix) : path_("/tmp/tq-fuzz-" + std::to_string(getpid()) + suffix) {}
    ~InputFile() { std::remove(path_.c_str()); }
    const std::string& write(const std::uint8_t* data, std::size_t size) const {
        std::FILE* f = std::fopen(path_.c_str(), "wb");
        if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) broken("cannot write " + path_);
        return path_;
    }

private:
    std::string path_;
};

// An error message a terminal and a log can take: one line, printable ASCII, bounded.
inline void check_message(std::string_view message, std::size_t max_length) {
    if (message.empty()) broken("an empty error message");
    if (message.size() > max_length)
        broken("an error message of " + std::to_string(message.size()) + " characters: " +
               std::string(message.substr(0, 200)) + "...");
    for (char c : message)
        if (c < 0x20 || c > 0x7e) broken("an error message with byte " + std::to_string(int(c)) + ": " + std::string(message.substr(0, 200)));
}

}  // namespace tq::fuzz
