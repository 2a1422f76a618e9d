// libFuzzer: tq-llama's model-file side on any bytes: the GGUF reader, the
// dequantization of the tensors the seeds name, and the tokenizer the metadata
// asks for, encoding and decoding a few texts.  Contract (gguf.hpp, tokenizer.hpp):
// success, or a std::runtime_error; never a crash, an out-of-bounds read (ASan),
// or another exception.
#include "dequantize.hpp"
#include "fuzz_support.hpp"
#include "gguf.hpp"
#include "tokenizer.hpp"

#include <stdexcept>

namespace {

// The tensors make_seeds.py writes.
constexpr const char* kTensors[] = {"token_embd.weight", "output_norm.weight", "blk.0.attn_q.weight"};
constexpr const char* kTexts[] = {"Hello world", " the  cat's 123 dogs\n", "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                                  "\xff\xfe\x80 raw bytes"};

void use(const llama::GgufFile& file) {
    for (const char* name : kTensors)
        if (file.has_tensor(name) && file.tensor(name).elements() <= (1u << 20)) llama::dequantize(file.tensor(name));
    const llama::Tokenizer tokenizer(file);
    for (const char* text : kTexts)
        for (std::int32_t id : tokenizer.encode(text)) {
            if (id < 0 || std::size_t(id) >= tokenizer.vocab_size())
                tq::fuzz::broken("token id " + std::to_string(id) + " outside a vocabulary of " +
                                 std::to_string(tokenizer.vocab_size()));
            tokenizer.decode(id);
        }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const tq::fuzz::InputFile file(".gguf");
    try {
        use(llama::GgufFile(file.write(data, size)));
    } catch (const std::runtime_error&) {
        // the documented failure
    }
    return 0;
}
